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

// TestRanksZeroAndOffload trains the small ResNet on synthetic images on
// 1 and 2 ranks: two ranks under ZeRO-1 and ZeRO-3 (checkpointed) match
// one device's loss (batch-norm statistics are per rank, so only closely)
// with half of its optimizer state on rank 0 — under ZeRO-3 half of its
// parameters too —, ZeRO-2 with offload leaves no optimizer bytes on the
// compute device and puts them on the host, and every rank is reported.
func TestRanksZeroAndOffload(t *testing.T) {
	base := []string{"--dataset", "synthetic", "--steps", "2", "--batch", "8"}
	one := report(t, base...)
	zero1 := report(t, append(base, "--ranks", "2", "--zero", "1")...)
	zero3 := report(t, append(base, "--ranks", "2", "--zero", "3", "--checkpoint")...)
	off := report(t, append(base, "--ranks", "2", "--zero", "2", "--offload", "--amp", "bf16", "--amp-params")...)
	for _, r := range []map[string]any{zero1, zero3} {
		if d := math.Abs(r["final_loss"].(float64) - one["final_loss"].(float64)); d > 0.05 {
			t.Errorf("%v: final loss %v, one rank %v", r["flags"], r["final_loss"], one["final_loss"])
		}
	}
	for _, tag := range []string{"parameter", "optimizer"} {
		if got := peak(zero3, tag) / peak(one, tag); math.Abs(got-0.5) > 0.01 {
			t.Errorf("zero 3 on 2 ranks: %s peak %.4f× one rank's, want 0.50×", tag, got)
		}
	}
	if got := peak(zero1, "optimizer") / peak(one, "optimizer"); math.Abs(got-0.5) > 0.01 {
		t.Errorf("zero 1 on 2 ranks: optimizer peak %.4f× one rank's, want 0.50×", got)
	}
	if peak(off, "optimizer") != 0 {
		t.Errorf("offload: %v optimizer bytes on the compute device", peak(off, "optimizer"))
	}
	hosts, ok := off["extra"].(map[string]any)["host_ranks"].([]any)
	if !ok || len(hosts) != 2 || hosts[1].(map[string]any)["optimizer"].(float64) == 0 {
		t.Errorf("offload: host peaks %v", off["extra"].(map[string]any)["host_ranks"])
	}
	for _, r := range []map[string]any{zero1, off} {
		ranks, _ := r["extra"].(map[string]any)["ranks"].([]any)
		if len(ranks) != 2 || ranks[0].(map[string]any)["total"] != r["peak_bytes"].(map[string]any)["total"] {
			t.Errorf("extra.ranks = %v, want 2 ranks, rank 0's peaks first", ranks)
		}
	}
	t.Logf("optimizer peak: one rank %v, zero 1 %v; offload host %v", peak(one, "optimizer"), peak(zero1, "optimizer"), hosts)
}
