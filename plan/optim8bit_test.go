package plan

import (
	"testing"

	"github.com/headroom-ml/headroom/dtype"
)

// TestAdamW8bitMasterPlan: with amp-params (16-bit parameters, F32 master
// weights in the 8-bit optimizer) the prediction on meta equals the
// measurement on cpu, and the optimizer's bytes are those of plain
// adamw8bit plus the 4-byte masters: 4n more for each quantised parameter
// and, for each small one, 4n (its F32 m and v are 8n either way).
func TestAdamW8bitMasterPlan(t *testing.T) {
	for _, amp := range []dtype.DType{dtype.BF16, dtype.F16} {
		c := Config{Model: "transformer", Batch: 4, Seq: 16, Optimizer: Adam8bitName, AMP: amp, AMPParams: true}
		p := predictionEqualsMeasurement(t, "gpt_adamw8bit_amp_params_"+amp.String(), c)
		c.AMPParams = false
		plain, err := Predict(c)
		if err != nil {
			t.Fatal(err)
		}
		got := p.Ranks[0].Optimizer - plain.Ranks[0].Optimizer
		if want := 4 * p.Params; got != want {
			t.Errorf("%s: amp-params adds %d optimizer bytes to adamw8bit, want 4·%d params = %d (the masters)", amp, got, p.Params, want)
		}
	}
}

// TestAdamW8bitZeroPlan: 8-bit AdamW under data parallelism (ZeRO 0–3,
// bf16 master weights, offload) and over tensor- and pipeline-parallel
// meshes, predicted on meta equals measured on cpu,
// every rank's bytes by tag and the host's (the per-rank closed form is
// parallel's TestAdamW8bitZeroEqualsOneDevice).
func TestAdamW8bitZeroPlan(t *testing.T) {
	small := Config{Model: "transformer", Batch: 4, Seq: 16, Optimizer: Adam8bitName}
	with := func(c Config, f func(*Config)) Config { f(&c); return c }
	for name, c := range map[string]Config{
		"gpt_adamw8bit_r2":             with(small, func(c *Config) { c.Ranks = 2 }),
		"gpt_adamw8bit_r2_z1":          with(small, func(c *Config) { c.Ranks, c.Zero = 2, 1 }),
		"gpt_adamw8bit_r2_z2_bf16":     with(small, func(c *Config) { c.Ranks, c.Zero, c.AMP, c.AMPParams = 2, 2, dtype.BF16, true }),
		"gpt_adamw8bit_r2_z3":          with(small, func(c *Config) { c.Ranks, c.Zero = 2, 3 }),
		"gpt_adamw8bit_r2_z1_offload":  with(small, func(c *Config) { c.Ranks, c.Zero, c.Offload = 2, 1, true }),
		"gpt_adamw8bit_r2_z2_off_bf16": with(small, func(c *Config) { c.Ranks, c.Zero, c.Offload, c.AMP, c.AMPParams = 2, 2, true, dtype.BF16, true }),
		"gpt_adamw8bit_tp2":            with(small, func(c *Config) { c.TP = 2 }),
		"gpt_adamw8bit_pp2":            with(small, func(c *Config) { c.PP = 2 }),
		"gpt_adamw8bit_tp2_r2_z1":      with(small, func(c *Config) { c.TP, c.Ranks, c.Zero = 2, 2, 1 }),
		"gpt_adamw8bit_tp2_pp2_r2":     with(small, func(c *Config) { c.Batch, c.TP, c.PP, c.Ranks = 8, 2, 2, 2 }),
	} {
		predictionEqualsMeasurement(t, name, c)
	}
}
