package plan

import (
	"math"
	"testing"

	"github.com/headroom-ml/headroom/dtype"
)

// TestSplit175BModelStates plans GPT-3 175B on 1,024 ranks (TP 8, PP 16,
// DP 8, ZeRO 1, BF16 parameters with F32 masters, checkpointing) and holds
// every rank's model states against the distributed optimizer's closed
// form on its share Ψ_rank: 2 bytes of parameters, 2 of gradients (plus,
// on every stage but the last, the 16-bit gradient of one micro-batch's
// activation received from the next stage, B·S·width·2 bytes) and 12/DP
// of F32 masters and AdamW moments — 4 + 12/DP per parameter, against
// Megatron's 6 + 12/DP, whose gradients are F32.
func TestSplit175BModelStates(t *testing.T) {
	c := Config{Model: "gpt3-175b", Batch: 8, Seq: 2048, TP: 8, PP: 16, Ranks: 8, Zero: 1, AMP: dtype.BF16, AMPParams: true, Checkpoint: -1}
	p, err := Predict(c)
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Ranks) != 1024 {
		t.Fatalf("%d ranks, want 1024", len(p.Ranks))
	}
	const width, dp = 12288, 8
	for i, r := range p.Ranks {
		recv := int64(c.Batch/dp) * int64(c.Seq) * width * 2 // one micro-batch's activation gradient, bf16
		if _, _, stage := c.shape().Coords(i); stage == c.PP-1 {
			recv = 0
		}
		opt := 12 * float64(r.Params) / dp
		if r.Parameter != 2*r.Params || r.Gradient != 2*r.Params+recv || math.Abs(float64(r.Optimizer)-opt) > 1e-6*opt {
			t.Fatalf("rank %d (%s): %d parameters: parameter %d B, gradient %d B, optimizer %d B; want %d, %d and %.0f",
				i, r.Layout, r.Params, r.Parameter, r.Gradient, r.Optimizer, 2*r.Params, 2*r.Params+recv, opt)
		}
	}
	r := p.Ranks[0]
	t.Logf("rank 0 (%s): %d parameters, model states %d B = %.4f B per parameter (4 + 12/8 = 5.5 and the received activation gradient)",
		r.Layout, r.Params, r.ModelState, float64(r.ModelState)/float64(r.Params))
}
