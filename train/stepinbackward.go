package train

import (
	"fmt"
	"math"

	"github.com/headroom-ml/headroom/autograd"
	"github.com/headroom-ml/headroom/optim"
	"github.com/headroom-ml/headroom/parallel"
)

// inBackward is the optimizer step inside the last micro-batch's backward
// (Stepper.StepInBackward): a hook on every parameter unscales its
// gradient, checks it for inf/NaN, updates the parameter and frees the
// gradient as soon as backward has added its last contribution. Each
// update keeps an undo (a copy of the parameter and its state on the
// Stepper's Host device, tag optimizer, op optim.UndoOp) until the step
// ends, so that a step the loss scaler skips, or one that fails, is
// rolled back bit for bit; release frees the copies of a step that stays.
type inBackward struct {
	st       *Stepper
	ps       optim.ParamStepper
	names    map[*autograd.Tensor]string
	undo     []*optim.Undo
	remove   []func()
	err      error                // the first failure inside a hook
	overflow bool                 // a gradient was not finite: the step will be skipped
	dp       *parallel.InBackward // data parallelism: the step per bucket (stepinbackward_dp.go)
}

// newInBackward checks that the Stepper's settings allow the step inside
// backward and returns its state (nil when StepInBackward is off).
func (st *Stepper) newInBackward() (*inBackward, error) {
	if !st.StepInBackward {
		return nil, nil
	}
	ps, ok := st.Opt.(optim.ParamStepper)
	_, sharded := st.Opt.(optim.Sharded)
	dp, isDP := st.Opt.(*parallel.Optimizer)
	switch {
	case st.Clip > 0:
		return nil, fmt.Errorf("step in backward (--step-in-backward) with gradient clipping (--clip %v): the global norm needs every gradient before the first update; choose one", st.Clip)
	case !isDP && (sharded || st.Sync != nil):
		return nil, fmt.Errorf("step in backward (--step-in-backward) with data parallelism: the optimizer %T is not a parallel.Optimizer (NewAdam, NewAdamW, NewSGD, NewAdamW8bit)", st.Opt)
	case !ok && !isDP:
		return nil, fmt.Errorf("step in backward: the optimizer %T cannot update one parameter at a time (SGD, Adam and AdamW can)", st.Opt)
	case st.Host == nil:
		return nil, fmt.Errorf("step in backward: the Stepper has no Host device for the undo copies of the parameters and their state (set Stepper.Host, e.g. cpu:100; meta:100 to plan)")
	case isDP:
		return st.newInBackwardDP(dp)
	}
	ib := &inBackward{st: st, ps: ps, names: map[*autograd.Tensor]string{}}
	for _, p := range ps.Params() {
		ib.names[p.T] = p.Name
	}
	return ib, nil
}

// attach puts the hooks on the parameters (a nil ib: none).
func (ib *inBackward) attach() {
	if ib == nil {
		return
	}
	if ib.dp != nil {
		ib.dp.Start()
		return
	}
	for t := range ib.names {
		ib.remove = append(ib.remove, t.OnGradReady(ib.ready))
	}
}

// detach removes the hooks and returns the first failure inside one.
func (ib *inBackward) detach() error {
	if ib == nil {
		return nil
	}
	if ib.dp != nil {
		return ib.dp.Stop()
	}
	for _, f := range ib.remove {
		f()
	}
	ib.remove = nil
	return ib.err
}

// ready is the hook: unscale, check, update, free. After an overflow the
// gradients are freed without an update, but the one that overflowed is
// kept so that the scaler's Step finds it and skips the step.
func (ib *inBackward) ready(leaf *autograd.Tensor) {
	g := leaf.Grad()
	if ib.err != nil || g == nil || !g.IsContiguous() {
		return // a failed step zeroes every gradient; Step updates the others
	}
	if ib.overflow {
		leaf.ZeroGrad()
		return
	}
	sc, inv := ib.st.Scaler, 1.0
	if sc != nil && sc.Enabled() {
		inv = 1 / sc.Scale()
	}
	sums, err := optim.SumSquares("step_in_backward", []*autograd.Tensor{g}, inv)
	if err != nil {
		ib.err = err
		return
	}
	if ss := sums[0]; math.IsNaN(ss) || math.IsInf(ss, 0) {
		if sc == nil || !sc.Enabled() {
			ib.err = fmt.Errorf("gradient of %q is not finite (sum of squares %v; no loss scaler is enabled to skip the step)", ib.names[leaf], ss)
			return
		}
		ib.overflow = true
		g.ScaleInPlace(sc.Scale()) // back as it was: the scaler's Unscale divides it
		return
	}
	undo, err := ib.ps.StepParam(leaf, ib.st.Host)
	if err != nil {
		ib.err = err
		return
	}
	ib.undo = append(ib.undo, undo)
	leaf.ZeroGrad()
}

// rollback undoes the updates made so far (a nil ib: nothing).
func (ib *inBackward) rollback() {
	if ib == nil {
		return
	}
	if ib.dp != nil {
		ib.dp.Rollback()
		return
	}
	for i := len(ib.undo) - 1; i >= 0; i-- {
		ib.undo[i].Restore()
	}
	ib.undo = nil
}

// release frees the undo copies of a step that stays (a nil ib: nothing).
func (ib *inBackward) release() {
	if ib == nil {
		return
	}
	if ib.dp != nil {
		ib.dp.Release()
		return
	}
	for _, u := range ib.undo {
		u.Release()
	}
	ib.undo = nil
}
