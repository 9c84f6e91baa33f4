package plan

import (
	"testing"

	"github.com/headroom-ml/headroom/dtype"
)

// TestSplit175BModelStates plans GPT-3 175B on 1,024 ranks (TP 8, PP 16,
// DP 8, ZeRO 1, BF16 parameters with F32 masters, checkpointing) and holds
// every rank's model states against the distributed optimizer's closed
// form on its share Ψ_rank, exactly: 2 bytes of parameters, 2 of
// gradients and 12/DP of F32 masters and AdamW moments — 4 + 12/DP per
// parameter — and with F32 gradients (GradF32, Megatron's main_grad) 4 of
// gradients: Megatron's 6 + 12/DP. (The activation gradient a stage
// receives from the next is workspace, not gradient.)
func TestSplit175BModelStates(t *testing.T) {
	for _, f32 := range []bool{false, true} {
		c := Config{Model: "gpt3-175b", Batch: 8, Seq: 2048, TP: 8, PP: 16, Ranks: 8, Zero: 1, AMP: dtype.BF16, AMPParams: true, GradF32: f32, Checkpoint: -1}
		p, err := Predict(c)
		if err != nil {
			t.Fatal(err)
		}
		if len(p.Ranks) != 1024 {
			t.Fatalf("%d ranks, want 1024", len(p.Ranks))
		}
		const dp = 8
		grad := int64(2)
		if f32 {
			grad = 4
		}
		for i, r := range p.Ranks {
			if r.Parameter != 2*r.Params || r.Gradient != grad*r.Params || r.Optimizer*dp != 12*r.Params || r.ModelState*dp != (2+grad)*dp*r.Params+12*r.Params {
				t.Fatalf("f32 gradients %v, rank %d (%s): %d parameters: parameter %d B, gradient %d B, optimizer %d B, model states %d B; want %d, %d, 12/%d per parameter, (%d + 12/%d) per parameter",
					f32, i, r.Layout, r.Params, r.Parameter, r.Gradient, r.Optimizer, r.ModelState, 2*r.Params, grad*r.Params, dp, 2+grad, dp)
			}
		}
		r := p.Ranks[0]
		t.Logf("f32 gradients %v: rank 0 (%s): %d parameters, model states %d B = %.4f B per parameter (%d + 12/8)",
			f32, r.Layout, r.Params, r.ModelState, float64(r.ModelState)/float64(r.Params), 2+grad)
	}
}
