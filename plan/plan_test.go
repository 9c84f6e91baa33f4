package plan

import (
	"testing"

	"github.com/headroom-ml/headroom/dtype"
)

// TestPredictionEqualsMeasurement runs each technique on meta (the
// prediction) and on cpu (the measurement) and compares every rank's peak
// bytes by tag.
func TestPredictionEqualsMeasurement(t *testing.T) {
	small := Config{Model: "transformer", Batch: 4, Seq: 16}
	img := Config{Model: "small", Batch: 4}
	with := func(c Config, f func(*Config)) Config { f(&c); return c }
	cases := map[string]Config{
		"gpt_f32":               small,
		"gpt_autocast_bf16":     with(small, func(c *Config) { c.AMP, c.Autocast = dtype.BF16, true }),
		"gpt_master_bf16":       with(small, func(c *Config) { c.AMP = dtype.BF16 }), // f16 on real data skips its first steps while the loss scale backs off, so its optimizer state appears later than on meta
		"gpt_checkpoint_sqrt":   with(small, func(c *Config) { c.Checkpoint = -1 }),
		"gpt_checkpoint_2":      with(small, func(c *Config) { c.Checkpoint = 2 }),
		"gpt_checkpoint_budg":   with(small, func(c *Config) { c.CheckpointBudget = 64 << 10 }),
		"gpt_accum_2":           with(small, func(c *Config) { c.Accum = 2 }),
		"gpt_ranks2_zero1":      with(small, func(c *Config) { c.Ranks, c.Zero = 2, 1 }),
		"gpt_ranks2_zero2_bf16": with(small, func(c *Config) { c.Ranks, c.Zero, c.AMP = 2, 2, dtype.BF16 }),
		"gpt_offload":           with(small, func(c *Config) { c.Ranks, c.Zero, c.Offload = 2, 1, true }),
		"resnet_f32":            img,
		"resnet_sgd_autocast":   with(img, func(c *Config) { c.AMP, c.Autocast = dtype.BF16, true }),
		"resnet_checkpoint":     with(img, func(c *Config) { c.Checkpoint = -1 }),
		"resnet_ranks2":         with(img, func(c *Config) { c.Ranks = 2 }),
	}
	for name, c := range cases {
		pred, err := Predict(c)
		if err != nil {
			t.Fatalf("%s: predict: %v", name, err)
		}
		c.onCPU = true
		meas, err := Predict(c)
		if err != nil {
			t.Fatalf("%s: measure: %v", name, err)
		}
		for i := range pred.Ranks {
			p, m := pred.Ranks[i], meas.Ranks[i]
			p.Device, m.Device = "", ""
			if p.PeakBytes != m.PeakBytes || p.ModelState != m.ModelState || (p.Host == nil) != (m.Host == nil) || (p.Host != nil && *p.Host != *m.Host) {
				t.Errorf("%s rank %d: predicted %+v, measured %+v", name, i, p, m)
			}
		}
		t.Logf("%-22s peak %8d B (parameter %d, gradient %d, optimizer %d, activation %d)", name,
			pred.Ranks[0].Total, pred.Ranks[0].Parameter, pred.Ranks[0].Gradient, pred.Ranks[0].Optimizer, pred.Ranks[0].Activation)
	}
}
