package nn

import (
	"fmt"

	"github.com/headroom-ml/headroom/autograd"
)

// fail panics with an *autograd.Error for op: a constructor or Forward
// called with arguments that do not fit. autograd.Try and Backward return
// it as an error.
func fail(op, format string, args ...any) {
	panic(&autograd.Error{Op: op, Msg: fmt.Sprintf(format, args...)})
}

// releaseOnPanic, deferred by a constructor, releases the parameters the
// module under construction already holds when the constructor panics
// (out of memory, say) and panics on, so that a failed build leaves the
// device as it found it. Every Params method tolerates a partly built
// module.
func releaseOnPanic(m Module) {
	if r := recover(); r != nil {
		Release(m)
		panic(r)
	}
}

// tensors lists the non-nil tensors among ts as params named after them.
func tensors(ts ...*autograd.Tensor) []Param {
	var ps []Param
	for _, t := range ts {
		if t != nil {
			ps = append(ps, Param{Name: t.Name(), T: t})
		}
	}
	return ps
}

// linearInit says how newLinear initialises a Linear: std 0 is PyTorch's
// default (U(±1/√in) for weight and bias); std > 0 draws the weight from
// N(0, std²) and zeroes the bias (GPT-2's scheme).
type linearInit struct{ std float64 }

// newLinear makes a Linear like NewLinear, with the given initialisation,
// releasing its weight if the bias cannot be allocated.
func newLinear(b *Builder, name string, in, out int, bias bool, init linearInit) *Linear {
	if in <= 0 || out <= 0 {
		fail("nn.linear", "%s: in %d and out %d features: want both > 0", name, in, out)
	}
	l := &Linear{Name: name, In: in, Out: out}
	defer func() {
		if r := recover(); r != nil {
			if l.Weight != nil {
				l.Weight.Release()
			}
			panic(r)
		}
	}()
	l.Weight = b.Param(join(name, "weight"), out, in)
	if bias {
		l.Bias = b.Param(join(name, "bias"), out)
	}
	if init.std > 0 {
		b.Normal(l.Weight, 0, init.std)
		return l // Param is zero-filled: the bias stays 0
	}
	b.KaimingUniform(l.Weight, in)
	if l.Bias != nil {
		b.KaimingUniform(l.Bias, in)
	}
	return l
}

// release drops the handles of intermediates a forward made, skipping the
// input it must not release.
func release(keep *autograd.Tensor, ts ...*autograd.Tensor) {
	for _, t := range ts {
		if t != nil && t != keep {
			t.Release()
		}
	}
}

// Every layer, block and model has a one-tensor Forward.
var (
	_ Layer = (*Conv2d)(nil)
	_ Layer = (*BatchNorm2d)(nil)
	_ Layer = (*LayerNorm)(nil)
	_ Layer = (*Embedding)(nil)
	_ Layer = (*Dropout)(nil)
	_ Layer = (*CausalSelfAttention)(nil)
	_ Layer = (*MLP)(nil)
	_ Layer = (*GPTBlock)(nil)
	_ Layer = (*GPT)(nil)
	_ Layer = (*BasicBlock)(nil)
	_ Layer = (*Bottleneck)(nil)
	_ Layer = (*ResNet)(nil)
)
