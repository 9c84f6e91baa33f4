package optim

import (
	"fmt"
	"math"

	"github.com/headroom-ml/headroom/autograd"
	"github.com/headroom-ml/headroom/device"
	"github.com/headroom-ml/headroom/dtype"
	"github.com/headroom-ml/headroom/nn"
)

// Zero asks for an actual 0 in a config field whose zero value means a
// non-zero default (AdamConfig.Beta1, Beta2, Eps, and AdamW's WeightDecay):
// AdamConfig{WeightDecay: optim.Zero} is AdamW without weight decay.
const Zero = -1.0

// orDefault resolves a config field: 0 is def, Zero is 0.
func orDefault(v, def float64) float64 {
	switch v {
	case 0:
		return def
	case Zero:
		return 0
	}
	return v
}

// slot is one trained parameter and its state.
type slot struct {
	name  string
	t     *autograd.Tensor
	state []*autograd.Tensor // one per stateNames entry; nil until the first update
	step  int                // updates applied to this parameter
}

// base is what every optimizer here shares: the trained parameters, their
// state tensors (allocated together, lazily) and the learning rate.
type base struct {
	kind   string   // "sgd", "adam", "adamw": the prefix of errors
	master bool     // F32 master weights for F16/BF16 parameters (state[0])
	names  []string // state tensor names, e.g. exp_avg, exp_avg_sq
	slots  []*slot
	lr     float64
	steps  int // successful Step calls
	byName map[string]*slot
}

// newBase collects the trainable (non-buffer) params, checking that each
// has a unique non-empty name and a live tensor listed once.
func newBase(kind string, params []nn.Param, lr float64, master bool, names ...string) (base, error) {
	if master {
		names = append([]string{"master"}, names...)
	}
	b := base{kind: kind, master: master, names: names, lr: lr, byName: map[string]*slot{}}
	seen := map[*autograd.Tensor]string{}
	for i, p := range params {
		if p.Buffer {
			continue
		}
		switch {
		case p.T == nil:
			return b, fmt.Errorf("%s: parameter %d (%q) has no tensor", kind, i, p.Name)
		case p.T.Released():
			return b, fmt.Errorf("%s: parameter %q was released", kind, p.Name)
		case p.Name == "":
			return b, fmt.Errorf("%s: parameter %d (%v) has no name; state is saved by name", kind, i, p.T)
		case b.byName[p.Name] != nil:
			return b, fmt.Errorf("%s: two parameters are named %q", kind, p.Name)
		case seen[p.T] != "":
			return b, fmt.Errorf("%s: parameters %q and %q are the same tensor; list it once", kind, seen[p.T], p.Name)
		}
		if err := checkDType(kind, p.Name, p.T.DType(), master); err != nil {
			return b, err
		}
		seen[p.T] = p.Name
		s := &slot{name: p.Name, t: p.T}
		b.slots = append(b.slots, s)
		b.byName[p.Name] = s
	}
	if len(b.slots) == 0 {
		return b, fmt.Errorf("%s: no trainable parameters (%d given, all buffers or none)", kind, len(params))
	}
	return b, nil
}

// LR returns the learning rate of the next Step.
func (b *base) LR() float64 { return b.lr }

// SetLR sets the learning rate of the next Steps (Step rejects a negative
// or non-finite one).
func (b *base) SetLR(lr float64) { b.lr = lr }

// ZeroGrad frees the parameters' gradients.
func (b *base) ZeroGrad() {
	for _, s := range b.slots {
		s.t.ZeroGrad()
	}
}

// Release frees every state tensor. The optimizer stays usable: its next
// Step starts again from fresh state, as on the first step.
func (b *base) Release() {
	for _, s := range b.slots {
		for _, t := range s.state {
			t.Release()
		}
		s.state, s.step = nil, 0
	}
	b.steps = 0
}

// StateBytes returns the bytes of the optimizer's state tensors.
func (b *base) StateBytes() int64 {
	var n int64
	for _, s := range b.slots {
		for _, t := range s.state {
			n += t.Bytes()
		}
	}
	return n
}

// pending returns the slots that have a gradient, after checking every one
// of them and their state: nothing is written before this succeeds.
func (b *base) pending() ([]*slot, error) {
	if err := checkLR(b.kind, b.lr); err != nil {
		return nil, err
	}
	var work []*slot
	for _, s := range b.slots {
		if s.t.Released() {
			return nil, fmt.Errorf("%s: step: parameter %q was released", b.kind, s.name)
		}
		if s.t.Grad() == nil {
			continue
		}
		if err := b.checkSlot(s); err != nil {
			return nil, err
		}
		work = append(work, s)
	}
	return work, nil
}

// checkSlot checks a slot with a gradient: the parameter and gradient
// pair, and that its state still fits the parameter.
func (b *base) checkSlot(s *slot) error {
	if err := checkPair(b.kind, s.name, s.t, s.t.Grad(), b.master); err != nil {
		return err
	}
	for i, st := range s.state {
		if st.Released() || !sameShape(st.Shape(), s.t.Shape()) || st.DType() != b.stateDType(s) || st.Device() != s.t.Device() {
			return fmt.Errorf("%s: step: state %s.%s (%v) no longer fits parameter %v %s on %s (released outside the optimizer?)",
				b.kind, b.names[i], s.name, st, s.t.Shape(), s.t.DType(), s.t.Device())
		}
	}
	return nil
}

// checkLR checks the learning rate of a Step.
func checkLR(kind string, lr float64) error {
	if math.IsNaN(lr) || math.IsInf(lr, 0) || lr < 0 {
		return fmt.Errorf("%s: step: learning rate %v, want a finite value ≥ 0", kind, lr)
	}
	return nil
}

// checkPair checks that a parameter and its gradient can be updated by the
// optimizer kernels: F32 or F64 (F16 or BF16 with master weights),
// contiguous (views into a flat buffer included), one shape, dtype and
// device — or, with master weights, an F32 gradient of a 16-bit parameter
// (autograd's SetGradDType: the master update reads it directly).
func checkPair(kind, name string, p, g *autograd.Tensor, master bool) error {
	if err := checkDType(kind+": step", name, p.DType(), master); err != nil {
		return err
	}
	switch {
	case !dense(p):
		return fmt.Errorf("%s: step: parameter %q (%v, strides %v) is not contiguous; the optimizer updates contiguous tensors", kind, name, p.Shape(), p.Strides())
	case g.Released():
		return fmt.Errorf("%s: step: gradient of %q was released", kind, name)
	case !sameShape(g.Shape(), p.Shape()):
		return fmt.Errorf("%s: step: gradient of %q has shape %v, want the parameter's %v", kind, name, g.Shape(), p.Shape())
	case g.DType() != p.DType() && !(master && g.DType() == dtype.F32):
		return fmt.Errorf("%s: step: gradient of %q has dtype %s, want the parameter's %s%s", kind, name, g.DType(), p.DType(), orF32(master))
	case g.Device() != p.Device():
		return fmt.Errorf("%s: step: gradient of %q is on %s, the parameter on %s", kind, name, g.Device(), p.Device())
	case !dense(g):
		return fmt.Errorf("%s: step: gradient of %q (%v, strides %v) is not contiguous", kind, name, g.Shape(), g.Strides())
	}
	return nil
}

// orF32 names the other gradient dtype master weights accept.
func orF32(master bool) string {
	if master {
		return " or f32 (SetGradDType)"
	}
	return ""
}

// checkDType checks a parameter's dtype: the update kernels write F32 and
// F64 parameters (and state of their dtype); a 16-bit parameter needs
// master weights, an F32 copy that the kernels update and round into it.
func checkDType(where, name string, dt dtype.DType, master bool) error {
	switch {
	case master && !dt.IsLowPrecision():
		return fmt.Errorf("%s: parameter %q has dtype %s: master weights are f32 copies of f16 or bf16 parameters", where, name, dt)
	case !master && dt.IsLowPrecision():
		return fmt.Errorf("%s: parameter %q has dtype %s: the optimizer updates f32 or f64 parameters; set MasterWeights for 16-bit ones (an f32 copy and f32 state in the optimizer)", where, name, dt)
	case !master && dt != dtype.F32 && dt != dtype.F64:
		return fmt.Errorf("%s: parameter %q has dtype %s, want f32 or f64", where, name, dt)
	}
	return nil
}

// dense reports whether t is live and contiguous: a whole tensor or a
// contiguous view (a parameter's slice of a flat buffer, say).
func dense(t *autograd.Tensor) bool {
	return !t.Released() && t.IsContiguous()
}

// operand returns a contiguous tensor as a kernel operand.
func operand(t *autograd.Tensor) device.Operand {
	return device.Operand{Block: t.Block(), Off: t.Offset(), DType: t.DType(), Shape: t.Shape()}
}

// allocate gives every slot in work that has no state its state tensors:
// all of them, or — when the device runs out of memory — none (those made
// are released) and an error naming the call (step or load).
func (b *base) allocate(call string, work []*slot) error {
	if len(b.names) == 0 {
		return nil
	}
	var need []*slot
	for _, s := range work {
		if s.state == nil {
			need = append(need, s)
		}
	}
	var made []*autograd.Tensor // len(b.names) per slot of need, in order
	err := autograd.Try(func() {
		for _, s := range need {
			for _, n := range b.names {
				t := autograd.New(s.t.Device(), b.stateDType(s), device.Optimizer, s.t.Shape()...)
				made = append(made, t)
				t.Block().Relabel(n, s.name)
				t.SetName(n + "." + s.name)
			}
		}
	})
	if err != nil {
		for _, t := range made {
			t.Release()
		}
		return fmt.Errorf("%s: %s: allocating optimizer state (nothing was changed): %w", b.kind, call, err)
	}
	k := len(b.names)
	for i, s := range need {
		s.state = made[i*k : (i+1)*k : (i+1)*k]
		if b.master {
			s.state[0].CopyFrom(s.t)
		}
	}
	return nil
}

// stateDType is the dtype of a slot's state: F32 with master weights, else
// the parameter's.
func (b *base) stateDType(s *slot) dtype.DType {
	if b.master {
		return dtype.F32
	}
	return s.t.DType()
}

// target returns the tensor the update kernels write: the master copy, or
// the parameter itself.
func (b *base) target(s *slot) *autograd.Tensor {
	if b.master {
		return s.state[0]
	}
	return s.t
}

// publish copies an updated master copy into its 16-bit parameter.
func (b *base) publish(s *slot) {
	if b.master {
		s.t.CopyFrom(s.state[0])
	} else {
		s.t.Block().Bump()
	}
}

// Params returns the trained parameters, in order.
func (b *base) Params() []nn.Param {
	ps := make([]nn.Param, len(b.slots))
	for i, s := range b.slots {
		ps[i] = nn.Param{Name: s.name, T: s.t}
	}
	return ps
}

func sameShape(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func b2f(v bool) float64 {
	if v {
		return 1
	}
	return 0
}
