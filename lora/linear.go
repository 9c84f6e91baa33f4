package lora

import (
	"github.com/headroom-ml/headroom/autograd"
	"github.com/headroom-ml/headroom/nn"
)

// Linear is a frozen base layer plus a trained low-rank update:
// y = base(x) + Scale·(drop(x)·Aᵀ)·Bᵀ, with A (Rank, In) drawn like
// PyTorch's Linear weight (U(±1/√In), PEFT's kaiming_uniform(a=√5)) and B
// (Out, Rank) zero, so that the adapted layer starts equal to the base.
//
// Memory: parameters (Rank·In + Out·Rank)·s bytes (s the adapters'
// dtype's size) beside the base's. Forward, besides what the base layer
// leaves, leaves the result (…, Out) and the scaled low-rank activations
// (…, Rank), which B's product saves; with dropout also the dropped input
// (…, In), which A's product saves. x itself is saved alive already.
type Linear struct {
	Name          string
	In, Out, Rank int
	Scale         float64
	Base          nn.Layer         // *nn.Linear (frozen) or *quant.FrozenLinear
	A             *autograd.Tensor // lora_A: (Rank, In)
	B             *autograd.Tensor // lora_B: (Out, Rank)
	Drop          *nn.Dropout      // lora_dropout; nil without
}

// newLinear makes an adapter named name over base (in → out) from b.
func newLinear(b *nn.Builder, name string, base nn.Layer, in, out int, cfg Config, drop *nn.Dropout) *Linear {
	l := &Linear{Name: name, In: in, Out: out, Rank: cfg.Rank, Scale: cfg.Scale(), Base: base, Drop: drop}
	l.A = b.Param(name+".lora_A.weight", cfg.Rank, in)
	b.KaimingUniform(l.A, in)
	l.B = b.Param(name+".lora_B.weight", out, cfg.Rank)
	return l
}

// Forward returns base(x) + Scale·(drop(x)·Aᵀ)·Bᵀ.
func (l *Linear) Forward(x *autograd.Tensor) *autograd.Tensor {
	y := l.Base.Forward(x)
	defer x.Scope().Within(l.Name)()
	h := x
	if l.Drop != nil {
		h = l.Drop.Forward(x)
	}
	if h.DType() != l.A.DType() {
		c := h.Cast(l.A.DType())
		if h != x {
			h.Release()
		}
		h = c
	}
	u := autograd.Linear(h, l.A, nil) // (…, Rank)
	if h != x {
		h.Release()
	}
	us := u.Scale(l.Scale) // saved by B's product
	u.Release()
	v := autograd.Linear(us, l.B, nil) // (…, Out)
	us.Release()
	if v.DType() != y.DType() {
		c := v.Cast(y.DType())
		v.Release()
		v = c
	}
	out := y.Add(v)
	y.Release()
	v.Release()
	return out
}

// Params returns A and B (trained) and the base layer's params marked
// Buffer: the base is not trained.
func (l *Linear) Params() []nn.Param {
	ps := []nn.Param{{Name: l.A.Name(), T: l.A}, {Name: l.B.Name(), T: l.B}}
	return append(ps, frozen(l.Base)...)
}

// Train switches the adapter's dropout.
func (l *Linear) Train(on bool) {
	if l.Drop != nil {
		l.Drop.Train(on)
	}
}

// frozen returns m's params marked Buffer.
func frozen(m nn.Module) []nn.Param {
	ps := m.Params()
	for i := range ps {
		ps[i].Buffer = true
	}
	return ps
}
