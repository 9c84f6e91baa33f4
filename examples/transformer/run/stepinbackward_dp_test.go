package run_test

import (
	"fmt"
	"math"
	"path/filepath"
	"testing"

	"github.com/headroom-ml/headroom/train/traintest"
)

// TestStepInBackwardDataParallel runs 3 steps on 2 ranks under ZeRO 1 and
// 3 with and without --step-in-backward: the same final loss bit for bit,
// and the report records the flag.
func TestStepInBackwardDataParallel(t *testing.T) {
	dir := t.TempDir()
	for _, zero := range []string{"1", "3"} {
		plain, sib := filepath.Join(dir, "plain"+zero+".json"), filepath.Join(dir, "sib"+zero+".json")
		args := []string{"--steps", "3", "--clip", "0", "--ranks", "2", "--zero", zero}
		mainOK(t, append(args, "--report", plain)...)
		mainOK(t, append(args, "--step-in-backward", "--report", sib)...)
		p, s := traintest.ReadReport(t, plain), traintest.ReadReport(t, sib)
		lp, ls := p["final_loss"].(float64), s["final_loss"].(float64)
		if math.Float64bits(lp) != math.Float64bits(ls) {
			t.Errorf("zero %s: final loss %.17g with --step-in-backward, %.17g plain: want bit-identical", zero, ls, lp)
		}
		if f := s["flags"].(map[string]any)["step-in-backward"]; f != "true" {
			t.Errorf("zero %s: report flags record step-in-backward = %v, want true", zero, f)
		}
		t.Logf("zero %s: final loss %s", zero, fmt.Sprintf("%.9g", ls))
	}
}
