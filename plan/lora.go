package plan

import (
	"fmt"

	"github.com/headroom-ml/headroom/autograd"
	"github.com/headroom-ml/headroom/lora"
	"github.com/headroom-ml/headroom/nn"
)

// loraConfig returns the adapters' configuration of c (seed 1, as the
// planner's model).
func (c Config) loraConfig() (lora.Config, error) {
	base, err := lora.ParseBase(c.LoRABase)
	if err != nil {
		return lora.Config{}, err
	}
	return lora.Config{Rank: c.LoRA, Base: base, Targets: c.LoRATargets, Seed: 1}, nil
}

// checkLoRA refuses what LoRA is not planned with: a model other than a
// GPT, more than one rank (the parallel engines shard the whole model),
// 16-bit parameters, pruning and the 8-bit AdamW, as the transformer
// example refuses them.
func (c Config) checkLoRA(m Model) error {
	if c.LoRA == 0 && c.LoRABase == "" && c.LoRATargets == nil {
		return nil
	}
	cfg, err := c.loraConfig()
	if err == nil {
		err = cfg.Check()
	}
	switch {
	case err != nil:
		return err
	case m.Kind != "gpt":
		return fmt.Errorf("lora for %s: adapters go on a GPT's block Linears; %s is a %s", m.Name, m.Name, m.Kind)
	case c.Ranks > 1 || c.TP > 1 || c.PP > 1:
		return fmt.Errorf("lora with ranks %d, tp %d, pp %d: one device only", c.Ranks, c.TP, c.PP)
	case c.AMPParams || c.Prune > 0 || c.Optimizer == Adam8bitName:
		return fmt.Errorf("lora with amp-params, prune or %s: not available (plain --amp autocasts the forward)", Adam8bitName)
	}
	return nil
}

// adapt returns model with c's adapters (lora.Apply, owning it) when c
// asks for them, else model; on an error model is released.
func (c Config) adapt(model nn.Module) (nn.Module, error) {
	if c.LoRA == 0 {
		return model, nil
	}
	cfg, err := c.loraConfig()
	if err != nil {
		nn.Release(model)
		return nil, err
	}
	m, err := lora.Apply(model.(*nn.GPT), cfg, nil)
	if err != nil {
		nn.Release(model)
		return nil, err
	}
	return m, nil
}

// gptLoss returns a GPT's (plain or adapted) loss function, with its
// fused loss set as c says.
func gptLoss(c Config, model nn.Module) func(idx, targets *autograd.Tensor) *autograd.Tensor {
	if m, ok := model.(*lora.GPT); ok {
		m.Base.FusedLoss = c.FusedLoss
		return m.Loss
	}
	g := model.(*nn.GPT)
	g.FusedLoss = c.FusedLoss
	return g.Loss
}
