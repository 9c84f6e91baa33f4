package run_test

import (
	"math"
	"strings"
	"testing"
)

// TestSplitMatchesOneDevice trains 4 steps with --tp 2 (± sequence
// parallelism) and --pp 2 (both schedules) and compares the final loss
// with the one-device run of the same model and batches: within 1e-5
// (relative, F32) under TP, whose ranks add partial sums in another
// order, and bit for bit under PP, whose stages run one device's
// accumulation in its order. Every rank appears in extra.ranks and the
// header says the layout.
func TestSplitMatchesOneDevice(t *testing.T) {
	base := []string{"--steps", "4", "--sample", "0", "--dropout", "0"}
	for _, tc := range []struct {
		one, split []string
		tol        float64
	}{
		{nil, []string{"--tp", "2"}, 1e-5},
		{nil, []string{"--tp", "2", "--sequence-parallel"}, 1e-5},
		{[]string{"--tie-embeddings=false", "--accum", "2"}, []string{"--tie-embeddings=false", "--accum", "2", "--pp", "2"}, 0},
		{[]string{"--tie-embeddings=false", "--accum", "4"}, []string{"--tie-embeddings=false", "--accum", "4", "--pp", "2", "--pipe-schedule", "gpipe"}, 0},
	} {
		one := report(t, append(base, tc.one...)...)
		split := report(t, append(base, tc.split...)...)
		a, b := split["final_loss"].(float64), one["final_loss"].(float64)
		if math.Abs(a-b) > tc.tol*math.Abs(b) {
			t.Errorf("%v: final loss %v, one device %v (tolerance %g)", tc.split, a, b, tc.tol)
		}
		if ranks, _ := split["extra"].(map[string]any)["ranks"].([]any); len(ranks) != 2 {
			t.Errorf("%v: extra.ranks has %d entries, want 2", tc.split, len(ranks))
		}
		t.Logf("%v: %v, one device %v", tc.split, a, b)
	}
	out := mainOK(t, "--steps", "1", "--sample", "0", "--tp", "2")
	if !strings.Contains(out, "on 2 tensor-parallel ranks cpu:0…cpu:1") || !strings.Contains(out, "layout: tensor parallel 2: each rank 1 of 2 heads") {
		t.Errorf("--tp 2: the header does not say the layout:\n%s", out)
	}
}
