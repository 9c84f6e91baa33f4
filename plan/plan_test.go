package plan

import (
	"testing"

	"github.com/headroom-ml/headroom/dtype"
)

// TestPredictionEqualsMeasurement runs each technique on meta (the
// prediction) and on cpu (the measurement) and compares every rank's peak
// bytes by tag, what each tag held at the peak, and the host's.
func TestPredictionEqualsMeasurement(t *testing.T) {
	small := Config{Model: "transformer", Batch: 4, Seq: 16}
	img := Config{Model: "small", Batch: 4}
	with := func(c Config, f func(*Config)) Config { f(&c); return c }
	cases := map[string]Config{
		"gpt_f32":                small,
		"gpt_amp_bf16":           with(small, func(c *Config) { c.AMP = dtype.BF16 }),
		"gpt_amp_fp16":           with(small, func(c *Config) { c.AMP = dtype.F16 }),
		"gpt_amp_params_bf16":    with(small, func(c *Config) { c.AMP, c.AMPParams = dtype.BF16, true }),
		"gpt_amp_params_fp16":    with(small, func(c *Config) { c.AMP, c.AMPParams = dtype.F16, true }),
		"gpt_checkpoint_sqrt":    with(small, func(c *Config) { c.Checkpoint = -1 }),
		"gpt_checkpoint_2":       with(small, func(c *Config) { c.Checkpoint = 2 }),
		"gpt_checkpoint_budg":    with(small, func(c *Config) { c.CheckpointBudget = 64 << 10 }),
		"gpt_selective":          with(small, func(c *Config) { c.Selective = true }),
		"gpt_selective_lean":     with(small, func(c *Config) { c.Selective, c.SelectiveLean = true, true }),
		"gpt_fused_loss":         with(small, func(c *Config) { c.FusedLoss = true }),
		"gpt_materialized":       with(small, func(c *Config) { c.MaterializedAttention, c.Dropout = true, 0.1 }),
		"gpt_materialized_sel":   with(small, func(c *Config) { c.MaterializedAttention, c.Dropout, c.Selective = true, 0.1, true }),
		"gpt_materialized_bf16":  with(small, func(c *Config) { c.MaterializedAttention, c.Selective, c.AMP = true, true, dtype.BF16 }),
		"gpt_fused_loss_bf16":    with(small, func(c *Config) { c.FusedLoss, c.AMP = true, dtype.BF16 }),
		"gpt_selective_bf16":     with(small, func(c *Config) { c.Selective, c.AMP = true, dtype.BF16 }),
		"resnet_selective":       with(img, func(c *Config) { c.Selective = true }),
		"gpt_offload_acts":       with(small, func(c *Config) { c.OffloadActivations = true }),
		"gpt_offload_acts_bf16":  with(small, func(c *Config) { c.OffloadActivations, c.AMP = true, dtype.BF16 }),
		"resnet_offload_acts":    with(img, func(c *Config) { c.OffloadActivations = true }),
		"gpt_r2_z1_offload_acts": with(small, func(c *Config) { c.Ranks, c.Zero, c.Offload, c.OffloadActivations = 2, 1, true, true }),
		"gpt_accum_2":            with(small, func(c *Config) { c.Accum = 2 }),
		"gpt_prune":              with(small, func(c *Config) { c.Prune = 0.5 }),
		"gpt_ranks2_zero2_prune": with(small, func(c *Config) { c.Ranks, c.Zero, c.Prune = 2, 2, 0.5 }),
		"gpt_ranks2_zero1":       with(small, func(c *Config) { c.Ranks, c.Zero = 2, 1 }),
		"gpt_ranks2_zero2_bf16":  with(small, func(c *Config) { c.Ranks, c.Zero, c.AMP, c.AMPParams = 2, 2, dtype.BF16, true }),
		"gpt_ranks2_zero1_fp16":  with(small, func(c *Config) { c.Ranks, c.Zero, c.AMP, c.AMPParams = 2, 1, dtype.F16, true }),
		"gpt_offload":            with(small, func(c *Config) { c.Ranks, c.Zero, c.Offload = 2, 1, true }),
		"gpt_ranks2_zero3":       with(small, func(c *Config) { c.Ranks, c.Zero = 2, 3 }),
		"gpt_ranks4_zero3_fp16":  with(small, func(c *Config) { c.Ranks, c.Zero, c.AMP, c.AMPParams = 4, 3, dtype.F16, true }),
		"resnet_ranks2_zero3":    with(img, func(c *Config) { c.Ranks, c.Zero = 2, 3 }),
		"gpt_ranks4_zero3_amp16": with(small, func(c *Config) { c.Ranks, c.Zero, c.AMP = 4, 3, dtype.F16 }),
		"resnet_ranks2_zero3_bf": with(img, func(c *Config) { c.Ranks, c.Zero, c.AMP = 2, 3, dtype.BF16 }),
		"resnet_f32":             img,
		"resnet_amp_bf16":        with(img, func(c *Config) { c.AMP = dtype.BF16 }),
		"resnet_amp_params_fp16": with(img, func(c *Config) { c.AMP, c.AMPParams = dtype.F16, true }),
		"resnet_checkpoint":      with(img, func(c *Config) { c.Checkpoint = -1 }),
		"resnet_prune":           with(img, func(c *Config) { c.Prune = 0.3 }),
		"resnet_ranks2":          with(img, func(c *Config) { c.Ranks = 2 }),
		"gpt_adamw8bit":          with(small, func(c *Config) { c.Optimizer = Adam8bitName }),
		"gpt_adamw8bit_bf16":     with(small, func(c *Config) { c.Optimizer, c.AMP = Adam8bitName, dtype.BF16 }),
		"resnet_adamw8bit":       with(img, func(c *Config) { c.Optimizer = Adam8bitName }),
	}
	for name, c := range cases {
		predictionEqualsMeasurement(t, name, c)
	}
}

// predictionEqualsMeasurement predicts c on meta and measures it on cpu,
// and compares every rank's peak bytes by tag, what each tag held at the
// peak, the host's and the parameter counts.
func predictionEqualsMeasurement(t *testing.T, name string, c Config) *Prediction {
	t.Helper()
	pred, err := Predict(c)
	if err != nil {
		t.Fatalf("%s: predict: %v", name, err)
	}
	meas, err := Measure(c)
	if err != nil {
		t.Fatalf("%s: measure: %v", name, err)
	}
	if pred.Params != meas.Params || len(pred.Ranks) != len(meas.Ranks) {
		t.Errorf("%s: %d parameters on %d ranks predicted, %d on %d measured", name, pred.Params, len(pred.Ranks), meas.Params, len(meas.Ranks))
	}
	for i := range pred.Ranks {
		p, m := pred.Ranks[i], meas.Ranks[i]
		p.Device, m.Device = "", ""
		if p.PeakBytes != m.PeakBytes || p.AtPeak != m.AtPeak || p.ModelState != m.ModelState || p.Params != m.Params ||
			(p.Host == nil) != (m.Host == nil) || (p.Host != nil && *p.Host != *m.Host) {
			t.Errorf("%s rank %d: predicted %+v, measured %+v", name, i, p, m)
		}
	}
	t.Logf("%-23s %9d parameters, peak %8d B (parameter %d, gradient %d, optimizer %d, activation %d)", name, pred.Params,
		pred.Ranks[0].Total, pred.Ranks[0].Parameter, pred.Ranks[0].Gradient, pred.Ranks[0].Optimizer, pred.Ranks[0].Activation)
	return pred
}

// TestTechniquesTakeEffect: the cases above compare techniques that ran.
// fp16 with 16-bit parameters stepped on cpu (Adam holds f32 masters, m
// and v: 12 bytes per parameter; a skipped step would hold none), and a
// pruned model is smaller than the plain one.
func TestTechniquesTakeEffect(t *testing.T) {
	for _, c := range []Config{
		{Model: "transformer", Batch: 4, Seq: 16, AMP: dtype.F16, AMPParams: true},
		{Model: "small", Batch: 4, AMP: dtype.F16, AMPParams: true, Optimizer: "adam"},
	} {
		m, err := Measure(c)
		if err != nil {
			t.Fatal(err)
		}
		if got, want := m.Ranks[0].Optimizer, 12*m.Params; got != want {
			t.Errorf("%s fp16: optimizer %d bytes on cpu, want 12 × %d parameters = %d", c.Model, got, m.Params, want)
		}
	}
	for _, c := range []Config{{Model: "transformer", Batch: 4, Seq: 16}, {Model: "small", Batch: 4}} {
		plain, err := Predict(c)
		if err != nil {
			t.Fatal(err)
		}
		c.Prune = 0.5
		pruned, err := Predict(c)
		if err != nil {
			t.Fatal(err)
		}
		if c.Model == "transformer" {
			// Half of the 4 heads (D = 32) and of the 512 hidden units stay:
			// per block ln_1, c_attn (3·2·32 × 128 + bias), c_proj (128 × 64
			// + bias), ln_2, c_fc (256 × 128 + bias), c_proj (128 × 256 +
			// bias); the embeddings (256 + 64) × 128 and ln_f, unpruned.
			const C, HD, F = 128, 2 * 32, 256
			block := 2*C + (3*HD*C + 3*HD) + (C*HD + C) + 2*C + (F*C + F) + (C*F + C)
			if want := int64(4*block + (256+64)*C + 2*C); pruned.Params != want {
				t.Errorf("transformer pruned by half: %d parameters, want %d", pruned.Params, want)
			}
		}
		if pruned.Params >= plain.Params || pruned.Ranks[0].Parameter >= plain.Ranks[0].Parameter {
			t.Errorf("%s pruned by half: %d parameters (%d bytes), plain %d (%d bytes)", c.Model, pruned.Params,
				pruned.Ranks[0].Parameter, plain.Params, plain.Ranks[0].Parameter)
		}
		t.Logf("%s: %d parameters, pruned by half %d", c.Model, plain.Params, pruned.Params)
	}
}
