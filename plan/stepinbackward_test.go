package plan

import (
	"strings"
	"testing"

	"github.com/headroom-ml/headroom/dtype"
)

// TestStepInBackwardPredictionEqualsMeasurement: the step inside backward
// planned on meta holds, tag by tag, what it holds on cpu; without
// accumulation its gradient peak falls below the plain step's, which
// holds every gradient at once; the host (meta:100 planned, cpu:100
// measured, equal) peaks at the undo copies' closed form, the parameters'
// bytes plus their optimizer state's, all tag optimizer.
func TestStepInBackwardPredictionEqualsMeasurement(t *testing.T) {
	small := Config{Model: "transformer", Batch: 4, Seq: 16, StepInBackward: true}
	img := Config{Model: "small", Batch: 4, StepInBackward: true}
	with := func(c Config, f func(*Config)) Config { f(&c); return c }
	for name, c := range map[string]Config{
		"gpt_sib":                 small,
		"gpt_sib_accum_2":         with(small, func(c *Config) { c.Accum = 2 }),
		"gpt_sib_amp_fp16":        with(small, func(c *Config) { c.AMP = dtype.F16 }),
		"gpt_sib_amp_params_bf16": with(small, func(c *Config) { c.AMP, c.AMPParams = dtype.BF16, true }),
		"gpt_sib_checkpoint":      with(small, func(c *Config) { c.Checkpoint = -1 }),
		"gpt_sib_adamw8bit":       with(small, func(c *Config) { c.Optimizer = Adam8bitName }),
		"resnet_sib":              img,
		"resnet_sib_adamw":        with(img, func(c *Config) { c.Optimizer = "adamw" }),
	} {
		sib := predictionEqualsMeasurement(t, name, c)
		c.StepInBackward = false
		plain, err := Predict(c)
		if err != nil {
			t.Fatal(err)
		}
		r0, size := sib.Ranks[0], int64(dtype.F32.Size())
		if c.AMPParams {
			size = int64(c.AMP.Size())
		}
		params, state := r0.Params*size, r0.Optimizer // the trained parameters; their state (the device's optimizer peak)
		if h := r0.Host; h == nil || h.Total != params+state || h.Optimizer != h.Total {
			t.Errorf("%s: host peaks %+v, want total = optimizer tag = parameters %d + state %d", name, h, params, state)
		} else {
			t.Logf("%-23s host peak %d B = parameters %d B + state %d B", name, h.Total, params, state)
		}
		g, pg := sib.Ranks[0].Gradient, plain.Ranks[0].Gradient
		t.Logf("%-23s gradient peak %d B, plain %d B; total peak %d B, plain %d B", name, g, pg, sib.Ranks[0].Total, plain.Ranks[0].Total)
		if c.Accum > 1 && g != pg || c.Accum == 1 && !(g < pg) {
			t.Errorf("%s: gradient peak %d B in backward, %d B plain: want lower (equal with accumulation)", name, g, pg)
		}
	}
}

func TestStepInBackwardRefusedConfigs(t *testing.T) {
	base := Config{Model: "transformer", Batch: 4, Seq: 16, StepInBackward: true}
	for _, c := range []struct {
		f    func(*Config)
		want string
	}{
		{func(c *Config) { c.Ranks, c.Zero = 2, 1 }, "step in backward with 2 ranks, ZeRO stage 1"},
		{func(c *Config) { c.TP = 2 }, "step in backward with tp 2"},
	} {
		cc := base
		c.f(&cc)
		if err := cc.Validate(); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Validate(%+v) = %v, want an error containing %q", cc, err, c.want)
		}
	}
}
