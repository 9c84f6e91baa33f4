package optim

import (
	"fmt"

	"github.com/headroom-ml/headroom/autograd"
	"github.com/headroom-ml/headroom/device"
)

// ParamStepper is implemented by the optimizers that can update one
// parameter at a time, as soon as its gradient is complete — the optimizer
// step inside backward (train.Stepper's StepInBackward). SGD, Adam (AdamW)
// and the 8-bit AdamW implement it.
type ParamStepper interface {
	Optimizer
	// StepParam applies to the parameter t (one of Params' tensors, with a
	// gradient) the update the coming Step would apply to it, with the same
	// arithmetic, allocating its state first when it has none. The Step
	// that follows skips t once its gradient is freed and counts the step.
	// Before writing it copies t, and its master copy and state when they
	// exist, to tensors on host allocated through host's allocator (tag
	// optimizer, op UndoOp: t.Bytes() plus its state's bytes), held by the
	// returned Undo: Undo.Restore puts them, and t's update count, back bit
	// for bit (releasing state StepParam allocated), Undo.Release keeps
	// the update; both free the copies. On error nothing has changed.
	StepParam(t *autograd.Tensor, host *device.Device) (*Undo, error)
}

var (
	_ ParamStepper = (*SGD)(nil)
	_ ParamStepper = (*Adam)(nil)
)

// StepParam updates t alone (see ParamStepper).
func (o *SGD) StepParam(t *autograd.Tensor, host *device.Device) (*Undo, error) {
	return o.stepOne(t, host, func(s *slot, first bool) { o.update(s, first) })
}

// StepParam updates t alone (see ParamStepper).
func (a *Adam) StepParam(t *autograd.Tensor, host *device.Device) (*Undo, error) {
	return a.stepOne(t, host, func(s *slot, _ bool) { a.update(s) })
}

// stepOne checks t's slot, copies it to host, allocates its state if it
// has none, and runs update on it (first: the state is new).
func (b *base) stepOne(t *autograd.Tensor, host *device.Device, update func(s *slot, first bool)) (*Undo, error) {
	s := b.slotOf(t)
	switch {
	case s == nil:
		return nil, fmt.Errorf("%s: step_param: tensor %v is not a parameter of this optimizer", b.kind, t)
	case s.t.Released():
		return nil, fmt.Errorf("%s: step_param: parameter %q was released", b.kind, s.name)
	case s.t.Grad() == nil:
		return nil, fmt.Errorf("%s: step_param: parameter %q has no gradient", b.kind, s.name)
	}
	if err := checkLR(b.kind, b.lr); err != nil {
		return nil, err
	}
	if err := b.checkSlot(s); err != nil {
		return nil, err
	}
	first := s.state == nil
	u, err := saveUndo(b.kind, s.name, host, append([]*autograd.Tensor{s.t}, s.state...))
	if err != nil {
		return nil, err
	}
	if err := b.allocate("step_param", []*slot{s}); err != nil {
		u.Release()
		return nil, err
	}
	step := s.step
	update(s, first)
	u.reset = func() {
		if first {
			for _, st := range s.state {
				st.Release()
			}
			s.state = nil
		}
		s.step = step
	}
	return u, nil
}

// slotOf returns the slot of tensor t (nil if t is not trained here).
func (b *base) slotOf(t *autograd.Tensor) *slot {
	for _, s := range b.slots {
		if s.t == t {
			return s
		}
	}
	return nil
}
