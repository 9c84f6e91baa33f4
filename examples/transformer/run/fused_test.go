package run_test

import (
	"math"
	"path/filepath"
	"testing"

	"github.com/headroom-ml/headroom/train/traintest"
)

// TestFusedLossTrainsAsPlain runs 3 steps with and without --fused-loss:
// the same final loss within F32 rounding (the fused loss sums each row's
// log-sum-exp in chunks), and no logits among the activations, so the
// activation peak falls.
func TestFusedLossTrainsAsPlain(t *testing.T) {
	dir := t.TempDir()
	plainPath, fusedPath := filepath.Join(dir, "plain.json"), filepath.Join(dir, "fused.json")
	mainOK(t, "--steps", "3", "--report", plainPath)
	mainOK(t, "--steps", "3", "--fused-loss", "--report", fusedPath)
	p, f := traintest.ReadReport(t, plainPath), traintest.ReadReport(t, fusedPath)
	lp, lf := p["final_loss"].(float64), f["final_loss"].(float64)
	if math.Abs(lp-lf) > 1e-5*math.Abs(lp) {
		t.Errorf("final loss %.9g with --fused-loss, %.9g plain: want equal within 1e-5 relative", lf, lp)
	}
	ap := p["peak_bytes"].(map[string]any)["activation"].(float64)
	af := f["peak_bytes"].(map[string]any)["activation"].(float64)
	if af >= ap {
		t.Errorf("activation peak %v B with --fused-loss, %v B plain: want lower", af, ap)
	}
	t.Logf("final loss %.9g plain, %.9g fused; activation peak %v → %v B", lp, lf, ap, af)
}

// TestMaterializedAttentionSelective runs 3 steps with the attention
// materialized and dropout 0.1, plain and under --selective: the same
// final loss bit for bit (recomputation replays the dropout masks), and
// a lower activation peak, since selective recomputes the core attention.
func TestMaterializedAttentionSelective(t *testing.T) {
	dir := t.TempDir()
	plainPath, selPath := filepath.Join(dir, "plain.json"), filepath.Join(dir, "selective.json")
	args := []string{"--steps", "3", "--attention", "materialized", "--dropout", "0.1"}
	mainOK(t, append(args, "--report", plainPath)...)
	mainOK(t, append(args, "--selective", "--report", selPath)...)
	p, s := traintest.ReadReport(t, plainPath), traintest.ReadReport(t, selPath)
	lp, ls := p["final_loss"].(float64), s["final_loss"].(float64)
	if lp != ls {
		t.Errorf("final loss %.17g with --selective, %.17g plain: want identical", ls, lp)
	}
	ap := p["peak_bytes"].(map[string]any)["activation"].(float64)
	as := s["peak_bytes"].(map[string]any)["activation"].(float64)
	if as >= ap {
		t.Errorf("activation peak %v B with --selective, %v B plain: want lower", as, ap)
	}
	t.Logf("final loss %.9g; activation peak %v → %v B", lp, ap, as)
}
