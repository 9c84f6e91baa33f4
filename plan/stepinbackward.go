package plan

import "fmt"

// checkStepInBackward refuses what the optimizer step inside backward
// cannot run yet: ZeRO-Offload (the update runs on the host after
// backward) and tensor and pipeline parallelism. With data parallelism
// and ZeRO each rank steps its share of a bucket as the bucket's
// reduction completes (parallel.InBackward), its undo copies on
// meta:100+rank.
func (c Config) checkStepInBackward() error {
	if !c.StepInBackward {
		return nil
	}
	switch {
	case c.Offload:
		return fmt.Errorf("step in backward with offload: not available (ZeRO-Offload updates on the host after backward)")
	case c.TP > 1 || c.PP > 1:
		return fmt.Errorf("step in backward with tp %d, pp %d: not available yet (the model-parallel step clips and steps per stage)", c.TP, c.PP)
	}
	return nil
}
