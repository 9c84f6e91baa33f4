package plan

import (
	"testing"

	"github.com/headroom-ml/headroom/dtype"
)

// TestSplitPredictionEqualsMeasurement plans tensor- and pipeline-
// parallel steps of the transformer model on meta and measures them on
// cpu ranks: every rank's bytes by tag, at the peak and their own peaks,
// the communication buffers included, are equal to the byte.
func TestSplitPredictionEqualsMeasurement(t *testing.T) {
	small := Config{Model: "transformer", Batch: 4, Seq: 16}
	with := func(f func(*Config)) Config { c := small; f(&c); return c }
	for name, c := range map[string]Config{
		"tp2":            with(func(c *Config) { c.TP = 2 }),
		"tp2_sequence":   with(func(c *Config) { c.TP, c.Sequence = 2, true }),
		"tp4_bf16_ckpt":  with(func(c *Config) { c.TP, c.AMP, c.Checkpoint = 4, dtype.BF16, -1 }),
		"tp2_accum2_sgd": with(func(c *Config) { c.TP, c.Accum, c.Optimizer = 2, 2, "sgd" }),
		"pp2":            with(func(c *Config) { c.PP = 2 }),
		"pp2_accum4":     with(func(c *Config) { c.PP, c.Accum = 2, 4 }),
		"pp3_gpipe":      with(func(c *Config) { c.PP, c.Accum, c.Schedule = 3, 4, "gpipe" }),
	} {
		p := predictionEqualsMeasurement(t, name, c)
		n := max(c.TP, 1) * max(c.PP, 1)
		if len(p.Ranks) != n || p.Ranks[0].Communication == 0 {
			t.Errorf("%s: %d ranks, rank 0's communication peak %d B: want %d ranks and buffers", name, len(p.Ranks), p.Ranks[0].Communication, n)
		}
		for i, r := range p.Ranks { // AdamW in f32: 4 bytes of parameter and 8 of state per parameter held
			if c.Optimizer == "" && c.AMP == dtype.Invalid && (r.Parameter != 4*r.Params || r.Optimizer != 8*r.Params) {
				t.Errorf("%s rank %d: %d parameters in %d B, optimizer %d B: want 4 and 8 B each", name, i, r.Params, r.Parameter, r.Optimizer)
			}
		}
		var held int64 // the ranks' parameters: each split one once, the whole ones on every TP rank
		for _, r := range p.Ranks {
			held += r.Params
		}
		if c.PP > 1 && held != p.Params || c.TP > 1 && held <= p.Params {
			t.Errorf("%s: the ranks hold %d parameters, the model %d", name, held, p.Params)
		}
	}
}
