package run_test

import (
	"math"
	"testing"
)

// TestGradF32 runs --grad-f32 (F32 main gradients of 16-bit parameters):
// on 2 ranks under ZeRO 1 rank 0's gradient peak is exactly twice that of
// BF16 gradients and its parameter and optimizer peaks are unchanged; a
// mesh (--tp 2 --pp 2 --ranks 8 --zero 1) trains like one device with
// the same flags (4 steps, within 1e-4 relative, as the BF16 mesh runs of
// TestSplitMatchesOneDevice); with one micro-batch on one device the loss
// is bit for bit that of BF16 gradients without clipping (every gradient
// is one BF16 contribution, held exactly in F32; clipping scales F32
// gradients without rounding to BF16, so with it the runs differ).
func TestGradF32(t *testing.T) {
	base := []string{"--steps", "4", "--sample", "0", "--dropout", "0", "--amp", "bf16", "--amp-params"}
	with := func(args ...string) []string { return append(append([]string{}, base...), args...) }
	half := report(t, with("--ranks", "2", "--zero", "1")...)
	main := report(t, with("--ranks", "2", "--zero", "1", "--grad-f32")...)
	if peak(main, "gradient") != 2*peak(half, "gradient") || peak(main, "parameter") != peak(half, "parameter") || peak(main, "optimizer") != peak(half, "optimizer") {
		t.Errorf("--ranks 2 --zero 1: gradient %v, parameter %v, optimizer %v B with --grad-f32; %v, %v, %v without: want twice the gradient, the same others",
			peak(main, "gradient"), peak(main, "parameter"), peak(main, "optimizer"), peak(half, "gradient"), peak(half, "parameter"), peak(half, "optimizer"))
	}
	one := report(t, with("--tie-embeddings=false", "--accum", "4", "--grad-f32")...)
	mesh := report(t, with("--tie-embeddings=false", "--accum", "2", "--grad-f32", "--tp", "2", "--pp", "2", "--ranks", "8", "--zero", "1")...)
	if a, b := mesh["final_loss"].(float64), one["final_loss"].(float64); math.Abs(a-b) > 1e-4*math.Abs(b) {
		t.Errorf("--grad-f32 mesh: final loss %v, one device %v (tolerance 1e-4)", a, b)
	}
	// --clip 0: clipping scales BF16 gradients in BF16 (rounded), F32 ones in F32.
	same := report(t, with("--tie-embeddings=false", "--clip", "0")...)
	sameF32 := report(t, with("--tie-embeddings=false", "--clip", "0", "--grad-f32")...)
	if a, b := sameF32["final_loss"].(float64), same["final_loss"].(float64); a != b {
		t.Errorf("one device, one micro-batch: final loss %v with --grad-f32, %v without: want equal", a, b)
	}
	t.Logf("gradient peak %v → %v B (zero 1, 2 ranks); mesh %v, one device %v; one micro-batch %v, %v",
		peak(half, "gradient"), peak(main, "gradient"), mesh["final_loss"], one["final_loss"], sameF32["final_loss"], same["final_loss"])
}
