package main

import (
	"strings"

	"github.com/headroom-ml/headroom/plan"
	"github.com/headroom-ml/headroom/train"
)

// loraConfig sets c's LoRA fields from --lora, --lora-base and
// --lora-targets (the transformer example's flags). --lora-alpha changes
// no byte and is accepted; --lora-dropout is not planned and refused.
func (m *modelFlags) loraConfig(c *plan.Config) error {
	l := m.lora
	switch {
	case l.LoRA < 0:
		return train.Usagef("--lora %d: want a rank ≥ 1, or 0 for no adapters", l.LoRA)
	case l.LoRA == 0 && (l.LoRABase != "float" && l.LoRABase != "" || l.LoRATargets != "all" && l.LoRATargets != ""):
		return train.Usagef("--lora-base %s --lora-targets %s: want --lora R with them", l.LoRABase, l.LoRATargets)
	case l.LoRADropout != 0:
		return train.Usagef("--lora-dropout %g: not planned (plan the step without it)", l.LoRADropout)
	case l.LoRA == 0:
		return nil
	}
	c.LoRA, c.LoRABase = l.LoRA, l.LoRABase
	for _, t := range strings.Split(l.LoRATargets, ",") {
		c.LoRATargets = append(c.LoRATargets, strings.TrimSpace(t))
	}
	return nil
}

// loraTechniques adds the LoRA entries to a plan's techniques.
func loraTechniques(c plan.Config, t map[string]any) {
	if c.LoRA > 0 {
		t["lora"], t["lora_base"], t["lora_targets"] = c.LoRA, c.LoRABase, strings.Join(c.LoRATargets, ",")
	}
}
