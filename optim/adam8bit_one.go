package optim

import (
	"fmt"

	"github.com/headroom-ml/headroom/autograd"
	"github.com/headroom-ml/headroom/device"
)

var _ ParamStepper = (*Adam8bit)(nil)

// StepParam updates t alone (see ParamStepper): a quantised parameter
// block by block, as Step does (host scratch of one block), a small one
// through the F32 Adam. The undo's host copy of a quantised parameter is
// its bytes and its state's: 6 per element (4 for t, 1 for each code) and
// 8 per block (the two absmax), on host; with master weights 8 per element
// (2 for the 16-bit t, 4 for the master, 1 for each code).
func (a *Adam8bit) StepParam(t *autograd.Tensor, host *device.Device) (*Undo, error) {
	for _, s := range a.quant {
		if s.t == t {
			return a.stepQuant(s, host)
		}
	}
	if a.small != nil && a.small.slotOf(t) != nil {
		return a.small.StepParam(t, host)
	}
	return nil, fmt.Errorf("%s: step_param: tensor %v is not a parameter of this optimizer", a.kind, t)
}

// stepQuant checks, saves and updates one quantised slot.
func (a *Adam8bit) stepQuant(s *qslot, host *device.Device) (*Undo, error) {
	switch {
	case s.t.Released():
		return nil, fmt.Errorf("%s: step_param: parameter %q was released", a.kind, s.name)
	case s.t.Grad() == nil:
		return nil, fmt.Errorf("%s: step_param: parameter %q has no gradient", a.kind, s.name)
	}
	if err := checkLR(a.kind, a.lr); err != nil {
		return nil, err
	}
	if err := a.checkQ(s); err != nil {
		return nil, err
	}
	first := s.m == nil
	u, err := saveUndo(a.kind, s.name, host, append([]*autograd.Tensor{s.t}, s.tensors()...))
	if err != nil {
		return nil, err
	}
	if err := a.allocate([]*qslot{s}); err != nil {
		u.Release()
		return nil, err
	}
	step := s.step
	s.step++
	a.update(s, a.newScratch8())
	s.bump()
	u.reset = func() {
		if first {
			for _, x := range s.tensors() {
				x.Release()
			}
			s.clear()
		}
		s.step = step
	}
	return u, nil
}
