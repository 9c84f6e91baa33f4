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
		"tp2_pp2":        with(func(c *Config) { c.TP, c.PP, c.Accum = 2, 2, 2 }),
		"dp2_tp2_pp2_z1": with(func(c *Config) { c.Ranks, c.TP, c.PP, c.Zero, c.Batch = 2, 2, 2, 1, 8 }),
		"dp2_tp2_sp_z2":  with(func(c *Config) { c.Ranks, c.TP, c.Sequence, c.Zero = 2, 2, true, 2 }),
		"dp2_pp2":        with(func(c *Config) { c.Ranks, c.PP, c.Accum, c.Batch = 2, 2, 2, 8 }),
		"pp2_bf16_ckpt":  with(func(c *Config) { c.PP, c.Accum, c.AMP, c.Checkpoint = 2, 2, dtype.BF16, -1 }),
		"dp2_tp2_pp2_z1_bf16_ckpt": with(func(c *Config) {
			c.Ranks, c.TP, c.PP, c.Zero, c.Batch, c.AMP, c.Checkpoint = 2, 2, 2, 1, 8, dtype.BF16, -1
		}),
		"tp2_pp2_fp16": with(func(c *Config) { c.TP, c.PP, c.Accum, c.AMP = 2, 2, 2, dtype.F16 }),
		"dp2_tp2_pp2_z1_bf16_params_ckpt": with(func(c *Config) {
			c.Ranks, c.TP, c.PP, c.Zero, c.Batch, c.AMP, c.AMPParams, c.Checkpoint = 2, 2, 2, 1, 8, dtype.BF16, true, -1
		}),
		"dp2_tp2_pp2_z1_fp16_params": with(func(c *Config) {
			c.Ranks, c.TP, c.PP, c.Zero, c.Batch, c.AMP, c.AMPParams = 2, 2, 2, 1, 8, dtype.F16, true
		}),
		"tp2_fp16_params": with(func(c *Config) { c.TP, c.AMP, c.AMPParams = 2, dtype.F16, true }),
	} {
		p := predictionEqualsMeasurement(t, name, c)
		n := max(c.Ranks, 1) * max(c.TP, 1) * max(c.PP, 1)
		if len(p.Ranks) != n || p.Ranks[0].Communication == 0 {
			t.Errorf("%s: %d ranks, rank 0's communication peak %d B: want %d ranks and buffers", name, len(p.Ranks), p.Ranks[0].Communication, n)
		}
		for i, r := range p.Ranks { // AdamW in f32: 4 bytes of parameter and 8 of state per parameter held
			// ZeRO 1 and 2 over DP copies: 8/DP bytes of AdamW state per parameter (the shards pad by < DP elements).
			dp := int64(max(c.Ranks, 1))
			opt := 8 * r.Params
			if c.Zero > 0 {
				opt = 8 * ((r.Params + dp - 1) / dp)
			}
			// At the step's peak (a TP×PP rank's construction also held the other stages' shards for a moment).
			held := r.AtPeak.Parameter
			if c.Optimizer == "" && c.AMP == dtype.Invalid && (held != 4*r.Params || r.Optimizer != opt) {
				t.Errorf("%s rank %d: %d parameters in %d B, optimizer %d B: want 4 B each and %d B", name, i, r.Params, held, r.Optimizer, opt)
			}
			// 16-bit parameters: 2 B each; AdamW's F32 masters and moments, 12/DP B per parameter held.
			if c.AMPParams && (held != 2*r.Params || r.Optimizer != opt/2*3) {
				t.Errorf("%s rank %d: %d parameters in %d B, optimizer %d B: want 2 B each and %d B (12 per parameter, /DP under ZeRO)", name, i, r.Params, held, r.Optimizer, opt/2*3)
			}
		}
		var held int64 // the ranks' parameters: each split one once, the whole ones on every TP rank
		for _, r := range p.Ranks {
			held += r.Params
		}
		if c.TP < 2 && held != int64(max(c.Ranks, 1))*p.Params || c.TP > 1 && held <= p.Params {
			t.Errorf("%s: the ranks hold %d parameters, the model %d", name, held, p.Params)
		}
	}
}

// TestRepresentativesEqualFullMesh: a prediction that runs one rank per
// (tp, pp) coordinate for all data-parallel copies gives every rank the
// bytes the simulation of every copy gives, byte for byte.
func TestRepresentativesEqualFullMesh(t *testing.T) {
	small := Config{Model: "transformer", Batch: 8, Seq: 16}
	with := func(f func(*Config)) Config { c := small; f(&c); return c }
	for name, c := range map[string]Config{
		"dp2_tp2_pp2_z1": with(func(c *Config) { c.Ranks, c.TP, c.PP, c.Zero = 2, 2, 2, 1 }),
		"dp4_pp2_z2":     with(func(c *Config) { c.Ranks, c.PP, c.Zero, c.Accum = 4, 2, 2, 2 }),
		"dp2_tp2_sp":     with(func(c *Config) { c.Ranks, c.TP, c.Sequence = 2, 2, true }),
	} {
		rep, err := Predict(c)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		c.full = true
		full, err := Predict(c)
		if err != nil {
			t.Fatalf("%s: full: %v", name, err)
		}
		if len(rep.Ranks) != len(full.Ranks) || rep.Params != full.Params {
			t.Fatalf("%s: %d ranks, %d parameters; full %d, %d", name, len(rep.Ranks), rep.Params, len(full.Ranks), full.Params)
		}
		for i := range rep.Ranks {
			a, b := rep.Ranks[i], full.Ranks[i]
			if a.PeakBytes != b.PeakBytes || a.AtPeak != b.AtPeak || a.AllocatedPeak != b.AllocatedPeak || a.Params != b.Params || a.Layout != b.Layout {
				t.Errorf("%s rank %d (%s): representative %+v, full %+v", name, i, a.Layout, a.PeakBytes, b.PeakBytes)
			}
		}
		t.Logf("%s: %d ranks, rank %d %q: %s", name, len(rep.Ranks), len(rep.Ranks)-1, rep.Ranks[len(rep.Ranks)-1].Layout, rep.Ranks[len(rep.Ranks)-1].Device)
	}
}
