package run_test

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"

	"github.com/headroom-ml/headroom/examples/transformer/run"
	"github.com/headroom-ml/headroom/train/traintest"
)

// adamw8bitBytes is the closed form of an 8-bit AdamW's state for the
// model of args: 2n + 8·ceil(n/2048) bytes per parameter of ≥ 4096
// elements, 8n for the rest.
func adamw8bitBytes(t *testing.T, args []string) int64 {
	t.Helper()
	var sum int64
	for _, n := range trainedSizes(t, args) {
		if n >= 4096 {
			sum += 2*n + 8*((n+2047)/2048)
		} else {
			sum += 8 * n
		}
	}
	return sum
}

// TestAdamW8bitRun: 3 steps with --optimizer adamw8bit train and the
// report's optimizer peak is the closed form of the model's parameters.
func TestAdamW8bitRun(t *testing.T) {
	path := filepath.Join(t.TempDir(), "r.json")
	args := append(baseArgs(t), "--width", "64", "--optimizer", "adamw8bit")
	mainOK(t, "--width", "64", "--optimizer", "adamw8bit", "--steps", "3", "--report", path)
	r := traintest.ReadReport(t, path)
	got := r["peak_bytes"].(map[string]any)["optimizer"].(float64)
	if want := adamw8bitBytes(t, args); got != float64(want) {
		t.Errorf("optimizer peak %v bytes, want the closed form %d (2n + 8·ceil(n/2048) per parameter ≥ 4096 elements, 8n for the rest)", got, want)
	}
	if !(r["final_loss"].(float64) > 0) {
		t.Errorf("final loss %v", r["final_loss"])
	}
}

// TestAdamW8bitRefused: an unknown --optimizer is refused, naming the
// choices.
func TestAdamW8bitRefused(t *testing.T) {
	var out, errb bytes.Buffer
	if code := run.Main(append(baseArgs(t), "--optimizer", "lion"), &out, &errb); code == 0 || !strings.Contains(errb.String(), "adamw or adamw8bit") {
		t.Errorf("--optimizer lion: exit %d, stderr %q", code, errb.String())
	}
}
