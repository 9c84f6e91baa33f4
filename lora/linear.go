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
// dtype's size; Out counts only the covered thirds with Parts) beside the
// base's. With some of q, k, v only, the update is spread into the output
// through one (…, Out) temporary and (…, Out/3) zeros per uncovered third,
// released before Forward returns. Forward, besides what the base layer
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
	// Parts, on attn.c_attn, says which thirds of the output (q, k, v)
	// the update covers (all: the whole output); B then has rows for
	// those thirds only.
	Parts [3]bool
}

// newLinear makes an adapter named name over base (in → out) from b.
func newLinear(b *nn.Builder, name string, base nn.Layer, in, out int, cfg Config, drop *nn.Dropout, parts [3]bool) *Linear {
	l := &Linear{Name: name, In: in, Out: out, Rank: cfg.Rank, Scale: cfg.Scale(), Base: base, Drop: drop, Parts: parts}
	l.A = b.Param(name+".lora_A.weight", cfg.Rank, in)
	b.KaimingUniform(l.A, in)
	rows := out
	if l.parts() < 3 {
		rows = out / 3 * l.parts()
	}
	l.B = b.Param(name+".lora_B.weight", rows, cfg.Rank)
	return l
}

// parts returns how many thirds the update covers: 3 when it covers the
// whole output.
func (l *Linear) parts() int {
	n := 0
	for _, on := range l.Parts {
		if on {
			n++
		}
	}
	return n
}

// spread returns the update v of some thirds (n·Out/3 along dim) placed
// in its thirds of the output (Out along dim), zeros elsewhere, releasing
// v; v itself when it covers them all.
func (l *Linear) spread(v *autograd.Tensor, dim int) *autograd.Tensor {
	if l.parts() == 3 {
		return v
	}
	third := l.Out / 3
	shape := v.Shape()
	if dim < 0 {
		dim += len(shape)
	}
	shape[dim] = third
	var pieces []*autograd.Tensor
	at := 0
	for _, on := range l.Parts {
		if on {
			pieces = append(pieces, v.Slice(dim, at, at+third))
			at += third
		} else {
			pieces = append(pieces, v.Scope().Zeros(v.Device(), v.DType(), shape...))
		}
	}
	out := autograd.Concat(dim, pieces...)
	for _, t := range pieces {
		t.Release()
	}
	v.Release()
	return out
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
	v := l.spread(autograd.Linear(us, l.B, nil), -1) // (…, Out)
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
