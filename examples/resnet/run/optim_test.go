package run_test

import (
	"fmt"
	"path/filepath"
	"testing"

	"github.com/headroom-ml/headroom/device"
	"github.com/headroom-ml/headroom/device/cpu"
	"github.com/headroom-ml/headroom/dtype"
	"github.com/headroom-ml/headroom/nn"
	"github.com/headroom-ml/headroom/train/traintest"
)

// smallSizes returns the element counts of the MNIST small ResNet's
// trained parameters (not the batch-norm statistics).
func smallSizes(t *testing.T) []int64 {
	t.Helper()
	m, err := nn.SmallResNet(nn.NewBuilder(cpu.New(0, device.Options{}), dtype.F32, 1), "resnet", nn.ResNetConfig{Stem: "small", InChannels: 1, Classes: 10})
	if err != nil {
		t.Fatal(err)
	}
	defer nn.Release(m)
	var sizes []int64
	for _, p := range m.Params() {
		if !p.Buffer {
			sizes = append(sizes, int64(p.T.Len()))
		}
	}
	return sizes
}

// TestAdamWOptimizers: --optimizer adamw and adamw8bit train (a finite,
// positive loss) and hold the closed form of their state from the
// allocator: 8 bytes an element for AdamW's m and v in F32; for the 8-bit
// one 2n + 8·⌈n/2048⌉ bytes per parameter of ≥ 4096 elements (codes and
// an F32 absmax for each of m and v per block of 2048) and 8n for the
// smaller ones.
func TestAdamWOptimizers(t *testing.T) {
	var f32, q8 int64
	for _, n := range smallSizes(t) {
		f32 += 8 * n
		if n >= 4096 {
			q8 += 2*n + 8*((n+2047)/2048)
		} else {
			q8 += 8 * n
		}
	}
	for name, want := range map[string]int64{"adamw": f32, "adamw8bit": q8} {
		path := filepath.Join(t.TempDir(), name+".json")
		mainOK(t, "--steps", "3", "--optimizer", name, "--lr", "3e-3", "--report", path)
		r := traintest.ReadReport(t, path)
		got := r["peak_bytes"].(map[string]any)["optimizer"].(float64)
		if got != float64(want) {
			t.Errorf("--optimizer %s: optimizer peak %v bytes, want the closed form %d", name, got, want)
		}
		if l := r["final_loss"].(float64); !(l > 0) || fmt.Sprint(l) == "+Inf" {
			t.Errorf("--optimizer %s: final loss %v", name, l)
		}
	}
}
