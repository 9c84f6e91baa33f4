package autograd

import (
	"github.com/headroom-ml/headroom/device"
	"github.com/headroom-ml/headroom/dtype"
)

// Autocast runs f with ops autocasting to dt (F16 or BF16; dtype.Invalid
// turns autocast off inside f), PyTorch's torch.autocast scoped to this
// step instead of a thread:
//
//   - MatMul, Linear, Conv2d and ScaledDotProductAttention cast their float
//     inputs to dt and compute in it (on the cpu device: F32 arithmetic on
//     dt-rounded inputs, results rounded to dt); their outputs, and so the
//     activations saved downstream, are dt: that is where memory goes down.
//   - Softmax, LogSoftmax, Exp, Log, Pow, Sum, Mean and Var cast their
//     inputs to F32 and return F32.
//   - CrossEntropy computes in F32 and returns an F32 loss, reading (and
//     saving) the logits in their own dtype rather than an F32 copy.
//   - LayerNorm and BatchNorm2d compute in F32 whatever their input and
//     return their input's dtype (a departure from PyTorch, which returns
//     F32 for layer_norm: returning F32 would make every normalised
//     activation, and what the next op saves, twice as large).
//   - Other ops follow their widest input: an elementwise op of an F32
//     and a BF16 tensor gives F32 (outside autocast, and outside backward,
//     mixed float dtypes are an error: see dtypes.go).
//
// A parameter (a free-standing leaf) is cast once per scope and the cast
// reused by every op of the step; the casts are tagged parameter (they are
// the low-precision copy of the weights the step runs on) and freed when
// backward has passed the cast (without RetainGraph), else by Release.
// PyTorch's cache lives until the autocast region exits, and a cast then
// lives on only as a tensor saved for backward, freed as backward passes
// it; freeing at the cast's own backward step is the same in backward.
// Gradients reach the parameters in the parameters' own dtype.
// The cast of a gathered parameter (a leaf with a fetch function, ZeRO
// stage 3) holds storage only while the parameter is bound: Unbind frees
// it, the next use casts again, and an op that saves it for backward saves
// a reference through the parameter's saved-tensor hooks (castshard.go).
func (s *Scope) Autocast(dt dtype.DType, f func()) {
	old := s.SetAutocast(dt)
	defer s.SetAutocast(old)
	f()
}

// SetAutocast sets the autocast dtype (Invalid: off) and returns the
// previous one, for code that cannot wrap a function (checkpoint restores
// the forward's setting when it recomputes).
func (s *Scope) SetAutocast(dt dtype.DType) dtype.DType {
	if dt != dtype.Invalid && !dt.IsLowPrecision() {
		fail("autocast", "dtype %s: want f16 or bf16 (or invalid to turn it off)", dt)
	}
	s.hold("autocast")
	old := s.autocast
	s.autocast = dt
	s.unhold()
	return old
}

// AutocastDType returns the scope's autocast dtype (Invalid when off).
func (s *Scope) AutocastDType() dtype.DType { return s.autocast }

// castLow casts the float inputs of a low-precision op to the autocast
// dtype. It returns the tensors to use and the function that releases the
// casts the op made (cached parameter casts stay).
func (o *op) castLow(ts ...*Tensor) ([]*Tensor, func()) {
	if o.s == nil || o.s.autocast == dtype.Invalid {
		return ts, func() {}
	}
	return o.castAll(o.s.autocast, ts)
}

// castF32 casts the low-precision inputs of an F32-list op to F32 under
// autocast.
func (o *op) castF32(ts ...*Tensor) ([]*Tensor, func()) {
	if o.s == nil || o.s.autocast == dtype.Invalid {
		return ts, func() {}
	}
	return o.castAll(dtype.F32, ts)
}

func (o *op) castAll(dt dtype.DType, ts []*Tensor) ([]*Tensor, func()) {
	out := make([]*Tensor, len(ts))
	var made []*Tensor
	for i, t := range ts {
		switch {
		case t == nil || !t.dt.IsFloat() || t.dt == dt || (dt == dtype.F32 && !t.dt.IsLowPrecision()):
			out[i] = t
		case t.scope == nil && t.node == nil:
			out[i] = o.s.castParam(t, dt)
		default:
			c := t.Cast(dt)
			out[i] = c
			made = append(made, c)
		}
	}
	return out, func() {
		for _, c := range made {
			c.Release()
		}
	}
}

// castParam returns the scope's cached cast of a free-standing tensor (a
// parameter) to dt, making it on first use: tagged parameter, owned by the
// scope, recorded so that its gradient reaches t in t's dtype. The cast of
// a gathered leaf (one with a fetch function) lives only while the leaf is
// bound: see castshard.go.
func (s *Scope) castParam(t *Tensor, dt dtype.DType) *Tensor {
	key := castKey{t, dt}
	s.hold("autocast")
	c, ok := s.casts[key]
	s.unhold()
	switch {
	case ok && c.blk != nil:
		return c
	case ok && c.unbound:
		s.refill(c, t)
		return c
	}
	c = alloc(s, t.dev, dt, t.shape, s.castLabel(t))
	copyCast(c, t)
	o := &op{name: "autocast", s: s, dev: t.dev, record: s.noGrad == 0 && t.requiresGrad, ins: []*Tensor{t}}
	from := t.dt
	if n := o.grad([]*Tensor{c}, []*Tensor{t}, nil, func(bc *bctx) []*Tensor { return []*Tensor{bc.g[0].Cast(from)} }); n != nil {
		n.onFree = func() { dropCast(c) }
	}
	s.shardCast(c, t)
	s.hold("autocast")
	if s.casts == nil {
		s.casts = map[castKey]*Tensor{}
	}
	s.casts[key] = c
	s.unhold()
	return c
}

// dropCast frees the scope's reference to the storage of c, a cached cast
// whose graph node has been freed: backward has passed it, so every op of
// the graph that saved c has run its backward step (and dropped its saved
// reference, unless another graph of the scope still holds one, which
// keeps the storage alive). c then reads as unbound, and castParam casts
// again into fresh storage if a later op of the scope uses it.
func dropCast(c *Tensor) {
	if c.blk != nil {
		c.blk.Release()
		c.blk, c.unbound = nil, true
	}
}

// castLabel labels the cast of parameter t: tagged parameter, scoped by
// the parameter's name.
func (s *Scope) castLabel(t *Tensor) device.Label {
	l := s.label("autocast")
	l.Tag, l.Scope = device.Parameter, t.name
	return l
}

// copyCast writes t's values, rounded to c's dtype, into c.
func copyCast(c, t *Tensor) {
	if k := t.dev.Kernels(); k != nil {
		k.Copy(c.operand(), t.operand())
	}
}

type castKey struct {
	t  *Tensor
	dt dtype.DType
}
