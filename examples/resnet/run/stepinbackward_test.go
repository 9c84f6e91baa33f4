package run_test

import (
	"math"
	"testing"
)

// TestStepInBackwardTrainsAsPlain: 2 steps of the ResNet with and without
// --step-in-backward (SGD with Nesterov momentum, BatchNorm) end at the
// same loss bit for bit, the gradient peak below the plain run's (which
// holds every gradient at once).
func TestStepInBackwardTrainsAsPlain(t *testing.T) {
	p := report(t, "--steps", "2")
	s := report(t, "--steps", "2", "--step-in-backward")
	lp, ls := p["final_loss"].(float64), s["final_loss"].(float64)
	if math.Float64bits(lp) != math.Float64bits(ls) {
		t.Errorf("final loss %.17g with --step-in-backward, %.17g plain: want bit-identical", ls, lp)
	}
	gp := p["peak_bytes"].(map[string]any)["gradient"].(float64)
	gs := s["peak_bytes"].(map[string]any)["gradient"].(float64)
	if !(gs < gp) {
		t.Errorf("gradient peak %v B with --step-in-backward, %v B plain: want lower", gs, gp)
	}
	t.Logf("final loss %.9g; gradient peak %v B plain → %v B in backward (%.1f%%)", lp, gp, gs, 100*gs/gp)
}
