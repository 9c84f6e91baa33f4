package train

import (
	"flag"
	"fmt"
)

// StepFlags are the flags of the optimizer step (issue #19):
// --step-in-backward.
type StepFlags struct {
	// StepInBackward updates each parameter inside the last micro-batch's
	// backward as soon as its gradient is complete and frees the gradient
	// there (Stepper.StepInBackward), keeping the undo copies on the host
	// device cpu:UndoHost while the step runs.
	StepInBackward bool
}

// registerStep adds the StepFlags to fs.
func (s *StepFlags) registerStep(fs *flag.FlagSet) {
	fs.BoolVar(&s.StepInBackward, "step-in-backward", false, "update each parameter inside the last micro-batch's backward as soon as its gradient is complete and free the gradient there: one gradient alive at a time instead of all, for an undo on the host cpu:100 of the parameters and their optimizer state while the step runs (with --ranks/--zero: per gradient bucket as its reduction completes, undo on cpu:100+rank; not with --clip, --offload, --tp or --pp)")
}

// checkStep refuses --step-in-backward where it cannot work yet: ZeRO-
// Offload (the update runs on the host after backward) and model
// parallelism (the split Stepper clips and steps per stage). With data
// parallelism and ZeRO each rank steps its share of a bucket as the
// bucket's reduction completes (parallel.InBackward), its undo copies on
// cpu:100+rank.
func (c *Common) checkStep() error {
	if !c.StepInBackward {
		return nil
	}
	switch {
	case c.Offload:
		return fmt.Errorf("--step-in-backward with --offload: not available (ZeRO-Offload updates on the host after backward)")
	case c.TP > 1 || c.PP > 1:
		return fmt.Errorf("--step-in-backward with --tp %d or --pp %d: not available yet (the model-parallel step clips and steps per stage)", c.TP, c.PP)
	}
	return nil
}
