package optim

import (
	"fmt"

	"github.com/headroom-ml/headroom/autograd"
)

// ParamStepper is implemented by the optimizers that can update one
// parameter at a time, as soon as its gradient is complete — the optimizer
// step inside backward (train.Stepper's StepInBackward). SGD and Adam
// (AdamW) implement it.
type ParamStepper interface {
	Optimizer
	// StepParam applies to the parameter t (one of Params' tensors, with a
	// gradient) the update the coming Step would apply to it, with the same
	// arithmetic, allocating its state first when it has none. The Step
	// that follows skips t once its gradient is freed and counts the step.
	// Before writing it copies t, its master copy and its state to host
	// memory as they are stored — their bytes, held by the returned undo
	// until it is dropped — and undo puts them, and t's update count, back
	// bit for bit (releasing state StepParam allocated).
	// On error nothing has changed.
	StepParam(t *autograd.Tensor) (undo func(), err error)
}

var (
	_ ParamStepper = (*SGD)(nil)
	_ ParamStepper = (*Adam)(nil)
)

// StepParam updates t alone (see ParamStepper).
func (o *SGD) StepParam(t *autograd.Tensor) (func(), error) {
	return o.stepOne(t, func(s *slot, first bool) { o.update(s, first) })
}

// StepParam updates t alone (see ParamStepper).
func (a *Adam) StepParam(t *autograd.Tensor) (func(), error) {
	return a.stepOne(t, func(s *slot, _ bool) { a.update(s) })
}

// stepOne checks t's slot, saves it to host memory, allocates its state if
// it has none, and runs update on it (first: the state is new).
func (b *base) stepOne(t *autograd.Tensor, update func(s *slot, first bool)) (func(), error) {
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
	saved := []hostCopy{saveHost(s.t)}
	for _, st := range s.state {
		saved = append(saved, saveHost(st))
	}
	if err := b.allocate("step_param", []*slot{s}); err != nil {
		return nil, err
	}
	step := s.step
	update(s, first)
	return func() {
		for _, h := range saved {
			h.restore()
		}
		if first {
			for _, st := range s.state {
				st.Release()
			}
			s.state = nil
		}
		s.step = step
	}, nil
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

// hostCopy is a tensor's bytes in host memory, as the device holds them.
type hostCopy struct {
	t   *autograd.Tensor
	raw []byte
}

// saveHost copies contiguous t to host memory; on a device that holds no
// values (meta) there is nothing to copy and the copy is empty.
func saveHost(t *autograd.Tensor) hostCopy {
	k := t.Device().Kernels()
	if k == nil {
		return hostCopy{}
	}
	raw := make([]byte, t.Bytes())
	k.Read(raw, operand(t))
	return hostCopy{t: t, raw: raw}
}

// restore writes the copy back into its tensor.
func (h hostCopy) restore() {
	if h.t == nil {
		return
	}
	h.t.Device().Kernels().Write(operand(h.t), h.raw)
	h.t.Block().Bump()
}
