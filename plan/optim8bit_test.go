package plan

import (
	"strings"
	"testing"

	"github.com/headroom-ml/headroom/dtype"
)

// TestAdamW8bitRefused: ranks > 1 over a split model are refused before
// any model is built, with the reason.
func TestAdamW8bitRefused(t *testing.T) {
	for _, c := range []struct {
		c    Config
		want string
	}{
		{Config{Model: "transformer", Optimizer: Adam8bitName, Ranks: 2, TP: 2}, "ranks 1"},
	} {
		_, err := Predict(c.c)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: err %v, want one that says %q", c.c, err, c.want)
		}
	}
}

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
// bf16 master weights, offload) predicted on meta equals measured on cpu,
// every rank's bytes by tag and the host's (the per-rank closed form is
// parallel's TestAdamW8bitZeroEqualsOneDevice).
func TestAdamW8bitZeroPlan(t *testing.T) {
	small := Config{Model: "transformer", Batch: 4, Seq: 16, Optimizer: Adam8bitName}
	with := func(c Config, f func(*Config)) Config { f(&c); return c }
	for name, c := range map[string]Config{
		"gpt_adamw8bit_r2":            with(small, func(c *Config) { c.Ranks = 2 }),
		"gpt_adamw8bit_r2_z1":         with(small, func(c *Config) { c.Ranks, c.Zero = 2, 1 }),
		"gpt_adamw8bit_r2_z2_bf16":    with(small, func(c *Config) { c.Ranks, c.Zero, c.AMP, c.AMPParams = 2, 2, dtype.BF16, true }),
		"gpt_adamw8bit_r2_z3":         with(small, func(c *Config) { c.Ranks, c.Zero = 2, 3 }),
		"gpt_adamw8bit_r2_z1_offload": with(small, func(c *Config) { c.Ranks, c.Zero, c.Offload = 2, 1, true }),
	} {
		predictionEqualsMeasurement(t, name, c)
	}
}
