package run_test

import (
	"math"
	"path/filepath"
	"testing"

	"github.com/headroom-ml/headroom/train/traintest"
)

// report runs the example with args and returns its JSON report.
func report(t *testing.T, args ...string) map[string]any {
	t.Helper()
	path := filepath.Join(t.TempDir(), "r.json")
	mainOK(t, append(args, "--report", path)...)
	return traintest.ReadReport(t, path)
}

func peak(r map[string]any, tag string) float64 {
	return r["peak_bytes"].(map[string]any)[tag].(float64)
}

// TestRanksZeroRatios checks what the issue checks, on a tiny GPT: with
// --steps 2 --batch 8, two ranks under ZeRO-1 hold half of one rank's
// optimizer state (±1%), four under ZeRO-2 at most 0.30 of its gradients,
// four under ZeRO-3 a quarter of its parameters, gradients and optimizer
// state (±1%: the padding); two ranks under ZeRO-1 and four under ZeRO-3
// train like one on the whole batch (same loss and validation loss to
// float rounding); every rank is in extra.ranks.
func TestRanksZeroRatios(t *testing.T) {
	base := []string{"--steps", "2", "--batch", "8", "--sample", "0"}
	one := report(t, append(base, "--ranks", "1")...)
	zero1 := report(t, append(base, "--ranks", "2", "--zero", "1")...)
	zero2 := report(t, append(base, "--ranks", "4", "--zero", "2")...)
	zero3 := report(t, append(base, "--ranks", "4", "--zero", "3")...)
	for _, tag := range []string{"parameter", "gradient", "optimizer"} {
		if got := peak(zero3, tag) / peak(one, tag); math.Abs(got-0.25) > 0.0025 {
			t.Errorf("--ranks 4 --zero 3: %s peak %.4f× one rank's, want 0.25× (±1%%)", tag, got)
		}
	}
	if got := peak(zero1, "optimizer") / peak(one, "optimizer"); math.Abs(got-0.5) > 0.005 {
		t.Errorf("--ranks 2 --zero 1: optimizer peak %.4f× one rank's, want 0.50× (±1%%)", got)
	}
	if got := peak(zero2, "gradient") / peak(one, "gradient"); got > 0.30 {
		t.Errorf("--ranks 4 --zero 2: gradient peak %.4f× one rank's, want ≤ 0.30×", got)
	}
	for _, k := range []string{"final_loss", "eval"} {
		for _, r := range []map[string]any{zero1, zero3} {
			if a, b := r[k].(float64), one[k].(float64); math.Abs(a-b) > 1e-5*math.Abs(b) {
				t.Errorf("%s: %v with %v, %v on one rank", k, a, r["flags"], b)
			}
		}
	}
	ranks, _ := zero2["extra"].(map[string]any)["ranks"].([]any)
	if len(ranks) != 4 {
		t.Errorf("extra.ranks has %d entries, want 4", len(ranks))
	}
	t.Logf("optimizer %v → %v (zero 1, 2 ranks); gradient %v → %v, communication %v (zero 2, 4 ranks); parameter %v → %v, communication %v (zero 3, 4 ranks)",
		peak(one, "optimizer"), peak(zero1, "optimizer"), peak(one, "gradient"), peak(zero2, "gradient"), peak(zero2, "communication"),
		peak(one, "parameter"), peak(zero3, "parameter"), peak(zero3, "communication"))
}

// TestRanksTechniques runs the data-parallel path with the other
// techniques: mixed precision with offload, accumulation, checkpointing,
// and all of them under ZeRO-3.
func TestRanksTechniques(t *testing.T) {
	for _, args := range [][]string{
		{"--ranks", "2", "--zero", "2", "--offload", "--amp", "bf16", "--amp-params"},
		{"--ranks", "2", "--zero", "1", "--amp", "fp16", "--accum", "2"},
		{"--ranks", "2", "--checkpoint", "--dropout", "0.1"},
		{"--ranks", "2", "--zero", "3", "--amp", "bf16", "--amp-params", "--checkpoint", "--accum", "2", "--dropout", "0.1"},
		{"--ranks", "2", "--zero", "3", "--offload", "--amp", "bf16"},
	} {
		r := report(t, append([]string{"--steps", "2", "--sample", "0"}, args...)...)
		if !(r["final_loss"].(float64) > 0) {
			t.Errorf("%v: final loss %v", args, r["final_loss"])
		}
	}
}
