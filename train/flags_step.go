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
	fs.BoolVar(&s.StepInBackward, "step-in-backward", false, "update each parameter inside the last micro-batch's backward as soon as its gradient is complete and free the gradient there: one gradient alive at a time instead of all, for an undo on the host cpu:100 of the parameters and their optimizer state while the step runs (not with --clip, data parallelism, --tp or --pp)")
}

// checkStep refuses --step-in-backward where it cannot work yet: data
// parallelism (gradients are reduced across ranks while backward runs)
// and model parallelism (the split Stepper clips and steps per stage).
func (c *Common) checkStep() error {
	if !c.StepInBackward {
		return nil
	}
	switch {
	case c.Parallel():
		return fmt.Errorf("--step-in-backward with data parallelism (--ranks %d, --zero %d, --offload %v): not available yet (gradients are reduced across ranks before the updates)", c.Ranks, c.Zero, c.Offload)
	case c.TP > 1 || c.PP > 1:
		return fmt.Errorf("--step-in-backward with --tp %d or --pp %d: not available yet (the model-parallel step clips and steps per stage)", c.TP, c.PP)
	}
	return nil
}
