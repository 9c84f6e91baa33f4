package run_test

import (
	"bytes"
	"math"
	"path/filepath"
	"strings"
	"testing"

	"github.com/headroom-ml/headroom/examples/transformer/run"
	"github.com/headroom-ml/headroom/train/traintest"
)

// TestStepInBackwardTrainsAsPlain runs 3 steps with and without
// --step-in-backward (both --clip 0): the same final loss bit for bit (the
// same update kernels on the same gradients), and a gradient peak below
// the plain run's, which holds every gradient at once.
func TestStepInBackwardTrainsAsPlain(t *testing.T) {
	dir := t.TempDir()
	plainPath, sibPath := filepath.Join(dir, "plain.json"), filepath.Join(dir, "sib.json")
	mainOK(t, "--steps", "3", "--clip", "0", "--report", plainPath)
	mainOK(t, "--steps", "3", "--clip", "0", "--step-in-backward", "--report", sibPath)
	eightPath, eightSibPath := filepath.Join(dir, "8bit.json"), filepath.Join(dir, "8bit_sib.json")
	mainOK(t, "--steps", "3", "--clip", "0", "--width", "64", "--optimizer", "adamw8bit", "--report", eightPath)
	mainOK(t, "--steps", "3", "--clip", "0", "--width", "64", "--optimizer", "adamw8bit", "--step-in-backward", "--report", eightSibPath)
	e, es := traintest.ReadReport(t, eightPath), traintest.ReadReport(t, eightSibPath)
	if le, les := e["final_loss"].(float64), es["final_loss"].(float64); math.Float64bits(le) != math.Float64bits(les) {
		t.Errorf("adamw8bit: final loss %.17g with --step-in-backward, %.17g plain: want bit-identical", les, le)
	}
	p, s := traintest.ReadReport(t, plainPath), traintest.ReadReport(t, sibPath)
	lp, ls := p["final_loss"].(float64), s["final_loss"].(float64)
	if math.Float64bits(lp) != math.Float64bits(ls) {
		t.Errorf("final loss %.17g with --step-in-backward, %.17g plain: want bit-identical", ls, lp)
	}
	gp := p["peak_bytes"].(map[string]any)["gradient"].(float64)
	gs := s["peak_bytes"].(map[string]any)["gradient"].(float64)
	// The tied token embedding (256 × 32 F32) takes contributions from the
	// LM head first and the embedding last, so its gradient lives through
	// the whole backward; beside it one gradient at a time, the largest an
	// MLP weight (32 × 128).
	if want := float64(4 * (256*32 + 32*128)); gs != want || !(gs < gp) {
		t.Errorf("gradient peak %v B with --step-in-backward, %v B plain: want %v B", gs, gp, want)
	}
	if f := s["flags"].(map[string]any)["step-in-backward"]; f != "true" {
		t.Errorf("report flags record step-in-backward = %v, want true", f)
	}
	t.Logf("final loss %.9g; gradient peak %v B plain → %v B in backward", lp, gp, gs)
}

// TestStepInBackwardRefusals: the combinations that cannot work are
// refused before training, naming both flags.
func TestStepInBackwardRefusals(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--step-in-backward"}, "--clip 1: want 0 with --step-in-backward"},
		{[]string{"--step-in-backward", "--clip", "0", "--ranks", "2", "--zero", "1", "--offload"}, "--step-in-backward with --offload"},
	} {
		var out, errb bytes.Buffer
		code := run.Main(append(append(baseArgs(t), "--steps", "1"), c.args...), &out, &errb)
		if code == 0 || !strings.Contains(errb.String(), c.want) || strings.Contains(out.String(), "step 1") {
			t.Errorf("%v: exit %d, stderr %q; want a usage error containing %q", c.args, code, errb.String(), c.want)
		}
	}
}
