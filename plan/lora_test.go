package plan

import (
	"strings"
	"testing"

	"github.com/headroom-ml/headroom/dtype"
)

// TestLoRAPredictionEqualsMeasurement: LoRA steps (float and int8 base,
// some targets, with autocast and checkpointing) predicted on meta equal
// the same steps measured on cpu byte for byte; the adapters' gradient
// and AdamW bytes are 12·16·L·r·C with every Linear adapted, ≤ 10% of full
// fine-tuning's at r = 8 on the transformer example's model.
func TestLoRAPredictionEqualsMeasurement(t *testing.T) {
	small := Config{Model: "transformer", Batch: 4, Seq: 16}
	with := func(f func(*Config)) Config { c := small; f(&c); return c }
	for name, c := range map[string]Config{
		"gpt_lora16":            with(func(c *Config) { c.LoRA = 16 }),
		"gpt_lora16_int8":       with(func(c *Config) { c.LoRA, c.LoRABase = 16, "int8" }),
		"gpt_lora8_qv":          with(func(c *Config) { c.LoRA, c.LoRATargets = 8, []string{"q", "v"} }),
		"gpt_lora8_int8_bf16":   with(func(c *Config) { c.LoRA, c.LoRABase, c.AMP = 8, "int8", dtype.BF16 }),
		"gpt_lora4_attn_bf16":   with(func(c *Config) { c.LoRA, c.LoRATargets, c.AMP = 4, []string{"attn"}, dtype.BF16 }),
		"gpt_lora8_int8_ckpt":   with(func(c *Config) { c.LoRA, c.LoRABase, c.Checkpoint = 8, "int8", -1 }),
		"gpt_lora8_int8_fused":  with(func(c *Config) { c.LoRA, c.LoRABase, c.FusedLoss = 8, "int8", true }),
		"gpt_lora8_int8_accum2": with(func(c *Config) { c.LoRA, c.LoRABase, c.Accum = 8, "int8", 2 }),
	} {
		predictionEqualsMeasurement(t, name, c)
	}
	full, err := Predict(small)
	if err != nil {
		t.Fatal(err)
	}
	m, _ := Lookup("transformer")
	for _, base := range []string{"float", "int8"} {
		p, err := Predict(with(func(c *Config) { c.LoRA, c.LoRABase = 8, base }))
		if err != nil {
			t.Fatal(err)
		}
		got, fr := p.Ranks[0].Gradient+p.Ranks[0].Optimizer, full.Ranks[0].Gradient+full.Ranks[0].Optimizer
		if want := int64(12 * 16 * m.GPT.Layers * 8 * m.GPT.Width); got != want || float64(got) > 0.1*float64(fr) {
			t.Errorf("lora 8 %s: gradient+optimizer peaks %d bytes (full fine-tuning %d); want 12·16·L·r·C = %d, ≤ 10%%", base, got, fr, want)
		}
		t.Logf("lora 8 %s: gradient+optimizer %d bytes, %.4f of full fine-tuning's %d", base, got, float64(got)/float64(fr), fr)
	}
}

// TestLoRARefused: what LoRA is not planned with is refused before any
// model is built, with the reason.
func TestLoRARefused(t *testing.T) {
	for _, c := range []struct {
		c    Config
		want string
	}{
		{Config{Model: "small", LoRA: 8}, "adapters go on a GPT"},
		{Config{Model: "transformer", LoRA: 8, Ranks: 2}, "one device only"},
		{Config{Model: "transformer", LoRA: 8, LoRABase: "int4"}, `lora base "int4"`},
		{Config{Model: "transformer", LoRABase: "int8"}, "lora rank 0"},
		{Config{Model: "transformer", LoRA: 8, LoRATargets: []string{"ffn"}}, `lora target "ffn"`},
		{Config{Model: "transformer", LoRA: 8, AMP: dtype.BF16, AMPParams: true}, "amp-params"},
	} {
		_, err := Predict(c.c)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: err %v, want one that says %q", c.c, err, c.want)
		}
	}
}
