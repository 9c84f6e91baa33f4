package optim

import (
	"fmt"
	"math"

	"github.com/headroom-ml/headroom/device"
	"github.com/headroom-ml/headroom/nn"
)

// SGDConfig configures SGD. LR is required (PyTorch has no default); every
// other field's zero value is PyTorch's default.
type SGDConfig struct {
	// LR is the learning rate, > 0.
	LR float64
	// Momentum μ ≥ 0; default 0 (no momentum buffer).
	Momentum float64
	// Dampening τ scales the gradient's share of the momentum buffer by
	// (1 − τ) after the first step; default 0.
	Dampening float64
	// WeightDecay λ ≥ 0 adds λ·p to the gradient; default 0.
	WeightDecay float64
	// Nesterov uses Nesterov momentum (needs Momentum > 0 and Dampening 0).
	Nesterov bool
	// MasterWeights keeps an F32 copy of each F16/BF16 parameter (see
	// AdamConfig.MasterWeights): 4 bytes per element, plus 4 for momentum.
	MasterWeights bool
}

// SGD is stochastic gradient descent with PyTorch's semantics
// (torch.optim.SGD): per parameter p with gradient g (see device.SGDArgs),
//
//	g' = g + λ·p
//	buf ← g' on the parameter's first update, μ·buf + (1−τ)·g' after
//	p ← p − lr·(g' + μ·buf)   (Nesterov)
//	p ← p − lr·buf            (momentum)
//	p ← p − lr·g'             (μ = 0: no buffer)
//
// Memory: with momentum, one buffer per parameter ("momentum_buffer") of
// its shape and dtype — 4 bytes per F32 parameter element — tagged
// device.Optimizer, allocated on the first Step that sees the parameter's
// gradient; without momentum, none.
type SGD struct {
	base
	momentum, dampening, wd float64
	nesterov                bool
}

var _ Optimizer = (*SGD)(nil)

// NewSGD returns torch.optim.SGD over the non-buffer params.
func NewSGD(params []nn.Param, c SGDConfig) (*SGD, error) {
	finite := func(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }
	switch {
	case c.LR == 0:
		return nil, fmt.Errorf("sgd: LR is 0: SGD has no default learning rate; set SGDConfig.LR")
	case !(c.LR > 0) || !finite(c.LR):
		return nil, fmt.Errorf("sgd: LR is %v, want a finite value > 0", c.LR)
	case !(c.Momentum >= 0) || !finite(c.Momentum):
		return nil, fmt.Errorf("sgd: Momentum is %v, want a finite value ≥ 0", c.Momentum)
	case !finite(c.Dampening):
		return nil, fmt.Errorf("sgd: Dampening is %v, want a finite value", c.Dampening)
	case !(c.WeightDecay >= 0) || !finite(c.WeightDecay):
		return nil, fmt.Errorf("sgd: WeightDecay is %v, want a finite value ≥ 0", c.WeightDecay)
	case c.Nesterov && (c.Momentum == 0 || c.Dampening != 0):
		return nil, fmt.Errorf("sgd: Nesterov needs Momentum > 0 and Dampening 0, have %v and %v", c.Momentum, c.Dampening)
	}
	var names []string
	if c.Momentum != 0 {
		names = []string{"momentum_buffer"}
	}
	b, err := newBase("sgd", params, c.LR, c.MasterWeights, names...)
	if err != nil {
		return nil, err
	}
	return &SGD{base: b, momentum: c.Momentum, dampening: c.Dampening, wd: c.WeightDecay, nesterov: c.Nesterov}, nil
}

// Step applies one update to every parameter that has a gradient, after
// checking all of them and allocating any missing momentum buffer; on
// error nothing has changed. It bumps the version of every tensor it
// writes.
func (o *SGD) Step() error {
	work, err := o.pending()
	if err != nil {
		return err
	}
	first := make([]bool, len(work))
	for i, s := range work {
		first[i] = s.state == nil
	}
	if err := o.allocate("step", work); err != nil {
		return err
	}
	for i, s := range work {
		o.update(s, first[i])
	}
	o.steps++
	return nil
}

// update applies one SGD update to s (first: its momentum buffer was just
// allocated) and bumps the versions of what it wrote.
func (o *SGD) update(s *slot, first bool) {
	s.step++
	var buf device.Operand
	if o.momentum != 0 {
		buf = operand(s.state[len(s.state)-1])
	}
	p := o.target(s)
	if k := s.t.Device().Kernels(); k != nil {
		k.SGDStep(operand(p), operand(s.t.Grad()), buf, device.SGDArgs{
			LR: o.lr, Momentum: o.momentum, Dampening: o.dampening, WeightDecay: o.wd,
			Nesterov: o.nesterov, First: first,
		})
	}
	p.Block().Bump()
	if o.momentum != 0 {
		s.state[len(s.state)-1].Block().Bump()
	}
	o.publish(s)
}

func (o *SGD) hypers() []hyper {
	return []hyper{{"momentum", o.momentum}, {"dampening", o.dampening},
		{"weight_decay", o.wd}, {"nesterov", b2f(o.nesterov)}, {"master_weights", b2f(o.master)}}
}

// State returns the momentum buffers ("momentum_buffer.<name>", the
// optimizer's own tensors; none without momentum) and the scalars "step",
// "lr", "momentum", "dampening", "weight_decay" and "nesterov" (0 or 1).
func (o *SGD) State() State {
	s := o.state()
	for _, h := range o.hypers() {
		s.Scalars[h.name] = h.v
	}
	return s
}

// Load restores a State saved by an SGD over parameters of the same names,
// shapes and dtypes: the momentum buffers, the step count and the learning
// rate. The other hyperparameters must equal this optimizer's. Everything
// is checked, and missing buffers allocated, before anything is copied: on
// error the optimizer is unchanged. A parameter the State has no buffer for
// starts its buffer afresh on its next update.
func (o *SGD) Load(s State) error {
	l, err := o.check(s, o.hypers())
	if err != nil {
		return err
	}
	return o.restore(l, nil)
}
