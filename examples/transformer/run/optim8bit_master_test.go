package run_test

import (
	"bytes"
	"path/filepath"
	"testing"

	"github.com/headroom-ml/headroom/autograd"
	"github.com/headroom-ml/headroom/device"
	"github.com/headroom-ml/headroom/device/cpu"
	"github.com/headroom-ml/headroom/dtype"
	"github.com/headroom-ml/headroom/examples/transformer/run"
	"github.com/headroom-ml/headroom/nn"
	"github.com/headroom-ml/headroom/train/traintest"
)

// TestAdamW8bitAMPParamsRun: --optimizer adamw8bit with --amp bf16
// --amp-params trains 3 steps, and the optimizer peak is the 8-bit closed
// form plus the F32 masters, 4 bytes per trained element.
func TestAdamW8bitAMPParamsRun(t *testing.T) {
	path := filepath.Join(t.TempDir(), "r.json")
	flags := []string{"--width", "64", "--optimizer", "adamw8bit", "--amp", "bf16", "--amp-params"}
	mainOK(t, append(flags, "--steps", "3", "--report", path)...)
	r := traintest.ReadReport(t, path)
	args := append(baseArgs(t), flags...)
	want := adamw8bitBytes(t, args) + 4*trainedElems(t, args)
	if got := r["peak_bytes"].(map[string]any)["optimizer"].(float64); got != float64(want) {
		t.Errorf("optimizer peak %v bytes, want the closed form %d (adamw8bit's + 4 per element for the masters)", got, want)
	}
	if !(r["final_loss"].(float64) > 0) {
		t.Errorf("final loss %v", r["final_loss"])
	}
}

// trainedElems is the number of trained elements of args' model.
func trainedElems(t *testing.T, args []string) int64 {
	var n int64
	for _, k := range trainedSizes(t, args) {
		n += k
	}
	return n
}

// trainedSizes returns the element count of each trained (non-buffer)
// parameter of args' model.
func trainedSizes(t *testing.T, args []string) []int64 {
	t.Helper()
	c, err := run.Parse(args, &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	g, err := nn.NewGPT(nn.NewBuilder(cpu.New(0, device.Options{}), dtype.F32, 1), "gpt", c.GPT(), autograd.NewGenerator(1))
	if err != nil {
		t.Fatal(err)
	}
	defer nn.Release(g)
	var sizes []int64
	for _, p := range g.Params() {
		if !p.Buffer {
			sizes = append(sizes, int64(p.T.Len()))
		}
	}
	return sizes
}
