package plan

import "fmt"

// checkStepInBackward refuses what the optimizer step inside backward
// cannot run yet: data parallelism (gradients are reduced across ranks
// before the updates) and tensor and pipeline parallelism.
func (c Config) checkStepInBackward() error {
	if !c.StepInBackward {
		return nil
	}
	switch {
	case c.Ranks > 1 || c.Zero != 0 || c.Offload:
		return fmt.Errorf("step in backward with %d ranks, ZeRO stage %d: not available yet (gradients are reduced across ranks before the updates)", c.Ranks, c.Zero)
	case c.TP > 1 || c.PP > 1:
		return fmt.Errorf("step in backward with tp %d, pp %d: not available yet (the model-parallel step clips and steps per stage)", c.TP, c.PP)
	}
	return nil
}
