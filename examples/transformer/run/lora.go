package run

import (
	"fmt"
	"strings"

	"github.com/headroom-ml/headroom/lora"
	"github.com/headroom-ml/headroom/nn"
	"github.com/headroom-ml/headroom/optim"
	"github.com/headroom-ml/headroom/train"
)

// loraConfig returns the adapters' configuration of the flags.
func (c *Config) loraConfig() (lora.Config, error) {
	base, err := lora.ParseBase(c.LoRABase)
	if err != nil {
		return lora.Config{}, err
	}
	cfg := lora.Config{Rank: c.LoRA, Alpha: c.LoRAAlpha, Dropout: c.LoRADropout, Base: base, Seed: c.Seed}
	for _, t := range strings.Split(c.LoRATargets, ",") {
		cfg.Targets = append(cfg.Targets, strings.TrimSpace(t))
	}
	return cfg, nil
}

// checkLoRA checks the --lora flags and refuses what LoRA does not run
// with here: the parallel engines (they shard the whole model),
// --offload, --quantize and an 8-bit AdamW.
func (c *Config) checkLoRA() error {
	if err := c.CheckLoRA(c.Set); err != nil || c.LoRA == 0 {
		return err
	}
	cfg, err := c.loraConfig()
	if err == nil {
		err = cfg.Check()
	}
	if err != nil {
		return train.Usagef("--lora %d: %v", c.LoRA, err)
	}
	return train.First(
		train.Want(c.Ranks == 1 && c.Zero == 0 && c.TP == 1 && c.PP == 1, "lora", c.LoRA, "one device: no --ranks, --zero, --tp or --pp with --lora"),
		train.Want(!c.Offload, "lora", c.LoRA, "no --offload with --lora"),
		train.Want(c.Quantize == "", "quantize", c.Quantize, "no --quantize with --lora (--lora-base int8 keeps the base in INT8)"),
		train.Want(c.Optimizer == "adamw", "optimizer", c.Optimizer, "adamw with --lora (the adapters are small)"),
	)
}

// adapt puts the adapters on the replica's model (once, after --init has
// loaded it) and returns what the optimizer trains: the adapters alone.
func (r *replica) adapt() ([]nn.Param, error) {
	if r.lora == nil {
		cfg, err := r.c.loraConfig()
		if err != nil {
			return nil, err
		}
		if r.lora, err = lora.Apply(r.model, cfg, r.gen); err != nil {
			return nil, err
		}
	}
	return nn.Trainable(r.lora), nil
}

// loraOptimizer is the flags' AdamW over the adapters.
func (r *replica) loraOptimizer() (optim.Optimizer, error) {
	ps, err := r.adapt()
	if err != nil {
		return nil, err
	}
	return r.c.newOptimizer(ps, nil, false)
}

// loraTitle is the header's note of --lora ("" without).
func (c *Config) loraTitle() string {
	if c.LoRA == 0 {
		return ""
	}
	cfg, _ := c.loraConfig()
	return fmt.Sprintf(", LoRA r=%d (scale %g) on %s, %s base frozen", c.LoRA, cfg.Scale(), c.LoRATargets, cfg.Base)
}

// loraRecord is the report's record of the adapters: their
// configuration, the trainable parameters and the frozen base's bytes.
func loraRecord(m *lora.GPT) map[string]any {
	mods, _ := m.Config.Modules()
	var frozen int64
	for _, p := range m.Params() {
		if p.Buffer {
			frozen += p.T.Bytes()
		}
	}
	return map[string]any{"rank": m.Config.Rank, "alpha": m.Config.Alpha, "scale": m.Config.Scale(), "targets": m.Config.Targets, "modules": mods,
		"base": m.Config.Base.String(), "adapters": len(m.Adapters), "trainable_params": nn.Count(m), "frozen_bytes": frozen}
}
