package run_test

import (
	"math"
	"strconv"
	"strings"
	"testing"
)

// TestSplitMatchesOneDevice trains 20 steps with --tp 2 (± sequence
// parallelism), --pp 2 (both schedules) and meshes with data parallelism
// (DP2×TP2 and DP2×TP2×PP2 under ZeRO-1, DP2×PP2 under ZeRO-2) and
// compares the final loss with the one-device run of the same model and
// batches: within 1e-5 (relative, F32) under TP and DP, whose ranks add
// partial sums in another order, and bit for bit under PP, whose stages
// run one device's accumulation in its order. Every rank appears in
// extra.ranks and the header says the layout.
func TestSplitMatchesOneDevice(t *testing.T) {
	base := []string{"--steps", "20", "--sample", "0", "--dropout", "0"}
	for _, tc := range []struct {
		one, split []string
		tol        float64
	}{
		{nil, []string{"--tp", "2"}, 1e-5},
		{nil, []string{"--tp", "2", "--sequence-parallel"}, 1e-5},
		{[]string{"--tie-embeddings=false", "--accum", "2"}, []string{"--tie-embeddings=false", "--accum", "2", "--pp", "2"}, 0},
		// --pp unties the embeddings by default: the same run as an untied model.
		{[]string{"--tie-embeddings=false", "--accum", "2"}, []string{"--accum", "2", "--pp", "2"}, 0},
		{[]string{"--tie-embeddings=false", "--accum", "4"}, []string{"--tie-embeddings=false", "--accum", "4", "--pp", "2", "--pipe-schedule", "gpipe"}, 0},
		// The mesh: data-parallel copy d trains on micro-batches d·accum…; one device accumulates all of them.
		{[]string{"--tie-embeddings=false", "--accum", "4", "--clip", "0"}, []string{"--tie-embeddings=false", "--accum", "2", "--clip", "0", "--tp", "2", "--pp", "2", "--ranks", "8"}, 1e-5},
		{[]string{"--tie-embeddings=false", "--accum", "2", "--clip", "0"}, []string{"--tie-embeddings=false", "--clip", "0", "--tp", "2", "--ranks", "4", "--zero", "1"}, 1e-5},
		{[]string{"--tie-embeddings=false", "--accum", "4", "--clip", "0"}, []string{"--tie-embeddings=false", "--accum", "2", "--clip", "0", "--pp", "2", "--ranks", "4", "--zero", "2"}, 1e-5},
		// Global-norm clipping over the mesh (a clip of 0.1 binds in every step here).
		{[]string{"--tie-embeddings=false", "--accum", "4", "--clip", "0.1"}, []string{"--tie-embeddings=false", "--accum", "2", "--clip", "0.1", "--tp", "2", "--pp", "2", "--ranks", "8", "--zero", "1"}, 1e-5},
		{[]string{"--tie-embeddings=false", "--accum", "2", "--clip", "0.1"}, []string{"--tie-embeddings=false", "--accum", "2", "--clip", "0.1", "--tp", "2", "--pp", "2"}, 1e-5},
		// BF16 autocast inside the stages: within BF16 rounding of one device (measured 0 and 4.5e-5
		// relative after 20 steps); checkpointing inside the stages changes no bit.
		{[]string{"--tie-embeddings=false", "--accum", "2", "--amp", "bf16"}, []string{"--tie-embeddings=false", "--accum", "2", "--amp", "bf16", "--pp", "2"}, 1e-4},
		{[]string{"--tie-embeddings=false", "--accum", "4", "--amp", "bf16", "--clip", "0"}, []string{"--tie-embeddings=false", "--accum", "2", "--amp", "bf16", "--clip", "0", "--tp", "2", "--pp", "2", "--ranks", "8"}, 1e-4},
		{[]string{"--tie-embeddings=false", "--accum", "2", "--amp", "bf16", "--pp", "2"}, []string{"--tie-embeddings=false", "--accum", "2", "--amp", "bf16", "--checkpoint", "--pp", "2"}, 0},
		// F16 autocast, and 16-bit parameters with F32 masters (F16: loss-scaled, the found-inf flag agreed by every rank).
		{[]string{"--tie-embeddings=false", "--accum", "4", "--amp", "fp16"}, []string{"--tie-embeddings=false", "--accum", "2", "--amp", "fp16", "--tp", "2", "--pp", "2", "--ranks", "8", "--zero", "1"}, 1e-4},
		{[]string{"--tie-embeddings=false", "--accum", "4", "--amp", "bf16", "--amp-params"}, []string{"--tie-embeddings=false", "--accum", "2", "--amp", "bf16", "--amp-params", "--tp", "2", "--pp", "2", "--ranks", "8", "--zero", "1"}, 1e-4},
		{[]string{"--tie-embeddings=false", "--accum", "4", "--amp", "fp16", "--amp-params"}, []string{"--tie-embeddings=false", "--accum", "2", "--amp", "fp16", "--amp-params", "--tp", "2", "--pp", "2", "--ranks", "8", "--zero", "1"}, 1e-4},
		{[]string{"--amp", "fp16", "--amp-params"}, []string{"--amp", "fp16", "--amp-params", "--tp", "2"}, 1e-4},
		{[]string{"--tie-embeddings=false", "--accum", "2", "--clip", "0", "--tp", "2", "--pp", "2", "--ranks", "8"}, []string{"--tie-embeddings=false", "--accum", "2", "--clip", "0", "--checkpoint", "--tp", "2", "--pp", "2", "--ranks", "8"}, 0},
	} {
		one := report(t, append(base, tc.one...)...)
		split := report(t, append(base, tc.split...)...)
		a, b := split["final_loss"].(float64), one["final_loss"].(float64)
		if math.Abs(a-b) > tc.tol*math.Abs(b) {
			t.Errorf("%v: final loss %v, one device %v (tolerance %g)", tc.split, a, b, tc.tol)
		}
		if ranks, _ := split["extra"].(map[string]any)["ranks"].([]any); len(ranks) != rankCount(tc.split) {
			t.Errorf("%v: extra.ranks has %d entries, want %d", tc.split, len(ranks), rankCount(tc.split))
		}
		t.Logf("%v: %v, one device %v", tc.split, a, b)
	}
	out := mainOK(t, "--steps", "1", "--sample", "0", "--tp", "2")
	if !strings.Contains(out, "on 2 tensor-parallel ranks on cpu:0…cpu:1") || !strings.Contains(out, "layout: tensor parallel 2: each rank 1 of 2 heads") {
		t.Errorf("--tp 2: the header does not say the layout:\n%s", out)
	}
}

// rankCount returns --ranks among args, else --tp × --pp.
func rankCount(args []string) int {
	n := 1
	for i, a := range args {
		switch a {
		case "--ranks":
			return atoi(args[i+1])
		case "--tp", "--pp":
			n *= atoi(args[i+1])
		}
	}
	return n
}

func atoi(s string) int {
	n, _ := strconv.Atoi(s)
	return n
}

// TestSplitCheckpointSavesActivations: --checkpoint inside pipeline stages
// (and tensor-parallel ones) changes no bit of the loss and lowers every
// stage's activation peak (the stages once kept a copy of the model's parts
// taken before RunBlocks was set, so checkpointing silently did nothing).
func TestSplitCheckpointSavesActivations(t *testing.T) {
	base := []string{"--steps", "2", "--sample", "0", "--dropout", "0", "--layers", "4", "--tie-embeddings=false", "--accum", "2", "--clip", "0"}
	for _, layout := range [][]string{{"--pp", "2"}, {"--tp", "2", "--pp", "2"}, {"--pp", "2", "--amp", "bf16"}} {
		plain := report(t, append(append([]string{}, base...), layout...)...)
		ckpt := report(t, append(append([]string{"--checkpoint"}, base...), layout...)...)
		if a, b := ckpt["final_loss"].(float64), plain["final_loss"].(float64); a != b {
			t.Errorf("%v: final loss %v with --checkpoint, %v without: want the same bits", layout, a, b)
		}
		pr, cr := plain["extra"].(map[string]any)["ranks"].([]any), ckpt["extra"].(map[string]any)["ranks"].([]any)
		for r := range pr {
			p := pr[r].(map[string]any)["activation"].(float64)
			c := cr[r].(map[string]any)["activation"].(float64)
			if c >= p {
				t.Errorf("%v: rank %d activation peak %v B with --checkpoint, %v B without: want lower", layout, r, c, p)
			}
		}
	}
}
