package plan

import "testing"

// TestSelectiveGPT2Target is issue #18's target on meta: GPT-2 small
// (12 × 768, context 1024, vocabulary 50257) at batch 8, trained as GPT-2
// was (dropout 0.1) with the attention materialized — the baseline of
// Megatron-LM's sbh(34 + 5as/h) → 34·sbh — holds at most 0.35× plain's
// activation bytes at the peak under selective recomputation. With the
// fused attention, which stores no T² term, selective still holds less
// than plain, and the fused plain holds less than the materialized one.
func TestSelectiveGPT2Target(t *testing.T) {
	act := func(materialized, selective bool) int64 {
		t.Helper()
		p, err := Predict(Config{Model: "gpt2", Batch: 8, Dropout: 0.1, MaterializedAttention: materialized, Selective: selective})
		if err != nil {
			t.Fatal(err)
		}
		return p.Ranks[0].AtPeak.Activation
	}
	plainM, selM := act(true, false), act(true, true)
	plainF, selF := act(false, false), act(false, true)
	t.Logf("materialized: plain %d B, selective %d B (%.3f×); fused: plain %d B, selective %d B (%.3f×)",
		plainM, selM, float64(selM)/float64(plainM), plainF, selF, float64(selF)/float64(plainF))
	if float64(selM) > 0.35*float64(plainM) {
		t.Errorf("materialized attention: selective holds %d B of activations at the peak, plain %d B: want ≤ 0.35×", selM, plainM)
	}
	if selF >= plainF || plainF >= plainM {
		t.Errorf("fused attention: selective %d B, plain %d B, materialized plain %d B: want each less than the next", selF, plainF, plainM)
	}
}
