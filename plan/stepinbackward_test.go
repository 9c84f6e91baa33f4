package plan

import (
	"fmt"
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
		"gpt_sib_adamw8bit_ckpt":  with(small, func(c *Config) { c.Optimizer, c.Checkpoint = Adam8bitName, -1 }),
		"gpt_sib_lora8_int8_ckpt": with(small, func(c *Config) { c.LoRA, c.LoRABase, c.Checkpoint = 8, "int8", -1 }),
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
		{func(c *Config) { c.Ranks, c.Zero, c.Offload = 2, 1, true }, "step in backward with offload"},
		{func(c *Config) { c.TP = 2 }, "step in backward with tp 2"},
	} {
		cc := base
		c.f(&cc)
		if err := cc.Validate(); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Validate(%+v) = %v, want an error containing %q", cc, err, c.want)
		}
	}
}

// TestStepInBackwardDPPredictionEqualsMeasurement: under data parallelism
// and ZeRO 0–3 (2 ranks) the step inside backward planned on meta holds,
// tag by tag and rank by rank, what it holds on cpu; each rank's gradient
// peak is the plain step's (the DDP's buffers); its host (meta:100+r,
// cpu:100+r) peaks at the undo copies of its share and the share's AdamW
// state: 12 bytes per F32 element against the state's 8, so 3/2 of the
// device's optimizer peak.
func TestStepInBackwardDPPredictionEqualsMeasurement(t *testing.T) {
	for zero := range 4 {
		c := Config{Model: "transformer", Batch: 4, Seq: 16, StepInBackward: true, Ranks: 2, Zero: zero}
		name := fmt.Sprintf("gpt_sib_ranks2_zero%d", zero)
		sib := predictionEqualsMeasurement(t, name, c)
		c.StepInBackward = false
		plain, err := Predict(c)
		if err != nil {
			t.Fatal(err)
		}
		for r, rk := range sib.Ranks {
			if h := rk.Host; h == nil || h.Optimizer != h.Total || 2*h.Total != 3*rk.Optimizer {
				t.Errorf("%s rank %d: host peaks %+v, optimizer peak %d B: want total = optimizer tag = 3/2 of it", name, r, h, rk.Optimizer)
			}
			if rk.Gradient != plain.Ranks[r].Gradient {
				t.Errorf("%s rank %d: gradient peak %d B, plain %d B: want equal", name, r, rk.Gradient, plain.Ranks[r].Gradient)
			}
		}
		t.Logf("%s: host peak %d B, optimizer %d B, gradient %d B", name, sib.Ranks[0].Host.Total, sib.Ranks[0].Optimizer, sib.Ranks[0].Gradient)
	}
}
