package plan

import (
	"testing"

	"github.com/headroom-ml/headroom/dtype"
)

// TestGradF32ModelStates plans BF16 (and F16) parameters with F32 main
// gradients (GradF32) on meta and measures them on cpu — every rank's
// bytes by tag equal — and holds each rank's model states against
// Megatron's closed form on its share Ψ_r: 2 bytes of parameters, 4 of
// F32 gradients and 12/DP of F32 masters and AdamW moments (ZeRO stage 1
// over DP copies; 12 without data parallelism), 6 + 12/DP in all; ZeRO 2
// shards the gradients (4/DP) and ZeRO 3 the parameters too (2/DP).
func TestGradF32ModelStates(t *testing.T) {
	small := Config{Model: "transformer", Batch: 4, Seq: 16, AMP: dtype.BF16, AMPParams: true, GradF32: true}
	with := func(f func(*Config)) Config { c := small; f(&c); return c }
	for name, c := range map[string]Config{
		"bf16_grad_f32":                small,
		"bf16_grad_f32_accum2":         with(func(c *Config) { c.Accum = 2 }),
		"fp16_grad_f32":                with(func(c *Config) { c.AMP = dtype.F16 }),
		"dp2_z1_bf16_grad_f32":         with(func(c *Config) { c.Ranks, c.Zero = 2, 1 }),
		"dp4_z1_bf16_grad_f32_accum2":  with(func(c *Config) { c.Ranks, c.Zero, c.Accum, c.Batch = 4, 1, 2, 8 }),
		"dp2_tp2_pp2_z1_bf16_grad_f32": with(func(c *Config) { c.Ranks, c.TP, c.PP, c.Zero, c.Batch, c.Checkpoint = 2, 2, 2, 1, 8, -1 }),
		"tp2_pp2_accum2_fp16_grad_f32": with(func(c *Config) { c.TP, c.PP, c.Accum, c.AMP = 2, 2, 2, dtype.F16 }),
		"dp2_z2_bf16_grad_f32":         with(func(c *Config) { c.Ranks, c.Zero = 2, 2 }),
		"dp2_z3_bf16_grad_f32":         with(func(c *Config) { c.Ranks, c.Zero = 2, 3 }),
	} {
		p := predictionEqualsMeasurement(t, name, c)
		dp := int64(max(c.Ranks, 1))
		for i, r := range p.Ranks {
			held := r.Parameter
			if c.TP > 1 || c.PP > 1 { // at the step's peak: a TP×PP rank's construction also held the other stages' shards for a moment
				held = r.AtPeak.Parameter
			}
			grad := 4 * r.Params // F32 main gradients of every parameter held
			if c.Zero >= 2 {
				grad /= dp // ZeRO 2: the rank's shard of them
			}
			param := 2 * r.Params
			if c.Zero == 3 {
				param /= dp // ZeRO 3: the rank's shard (the gathered buckets are communication)
			}
			opt := 12 * r.Params
			if c.Zero > 0 {
				opt /= dp
			}
			states := held + r.Gradient + r.Optimizer
			if held != param || r.Gradient != grad || r.Optimizer != opt || c.Zero == 1 && states*dp != 6*dp*r.Params+12*r.Params {
				t.Errorf("%s rank %d: %d parameters: parameter %d B, gradient %d B, optimizer %d B, model states %d B; want %d, %d, %d (6 + 12/%d per parameter under ZeRO 1)",
					name, i, r.Params, held, r.Gradient, r.Optimizer, states, param, grad, opt, dp)
			}
		}
	}
}

// TestGradF32Refused: F32 gradients need 16-bit parameters.
func TestGradF32Refused(t *testing.T) {
	if _, err := Predict(Config{Model: "transformer", Batch: 4, Seq: 16, AMP: dtype.BF16, GradF32: true}); err == nil {
		t.Fatal("f32 gradients without amp params: no error")
	}
}
