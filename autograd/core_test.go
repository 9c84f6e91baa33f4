package autograd_test

import (
	"math/rand/v2"
	"testing"

	"github.com/headroom-ml/headroom/autograd"
	"github.com/headroom-ml/headroom/autograd/autogradtest"
	"github.com/headroom-ml/headroom/device"
	"github.com/headroom-ml/headroom/device/cpu"
)

type gradCase struct {
	name   string
	shapes [][]int
	lo, hi float64
	f      func(s *autograd.Scope, in []*autograd.Tensor) *autograd.Tensor
}

func runGradCases(t *testing.T, cases []gradCase) {
	t.Helper()
	for ci, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dev := cpu.New(0, device.Options{})
			rng := rand.New(rand.NewPCG(uint64(ci), 7))
			lo, hi := c.lo, c.hi
			if lo == 0 && hi == 0 {
				lo, hi = -2, 2
			}
			var in []*autograd.Tensor
			for _, sh := range c.shapes {
				in = append(in, autogradtest.Rand(dev, rng, lo, hi, sh...))
			}
			autogradtest.Check(t, autogradtest.Options{Seed: uint64(ci)}, c.f, in...)
			autogradtest.Release(in...)
			if n := dev.LiveBlocks(); n != 0 {
				t.Errorf("%d blocks still live after the check: %v", n, dev.Live())
			}
		})
	}
}

func TestGradElementwise(t *testing.T) {
	bin := func(f func(a, b *autograd.Tensor) *autograd.Tensor) func(*autograd.Scope, []*autograd.Tensor) *autograd.Tensor {
		return func(_ *autograd.Scope, in []*autograd.Tensor) *autograd.Tensor { return f(in[0], in[1]) }
	}
	un := func(f func(a *autograd.Tensor) *autograd.Tensor) func(*autograd.Scope, []*autograd.Tensor) *autograd.Tensor {
		return func(_ *autograd.Scope, in []*autograd.Tensor) *autograd.Tensor { return f(in[0]) }
	}
	runGradCases(t, []gradCase{
		{name: "add", shapes: [][]int{{3, 4}, {3, 4}}, f: bin((*autograd.Tensor).Add)},
		{name: "add_broadcast", shapes: [][]int{{2, 3, 4}, {1, 4}}, f: bin((*autograd.Tensor).Add)},
		{name: "sub_broadcast", shapes: [][]int{{3, 1}, {1, 5}}, f: bin((*autograd.Tensor).Sub)},
		{name: "mul_broadcast", shapes: [][]int{{2, 1, 4}, {3, 1}}, f: bin((*autograd.Tensor).Mul)},
		{name: "div", shapes: [][]int{{3, 4}, {4}}, lo: 0.5, hi: 2, f: bin((*autograd.Tensor).Div)},
		{name: "maximum", shapes: [][]int{{3, 4}, {3, 4}}, f: bin((*autograd.Tensor).Maximum)},
		{name: "minimum_broadcast", shapes: [][]int{{3, 4}, {1}}, f: bin((*autograd.Tensor).Minimum)},
		{name: "scalar_shapes", shapes: [][]int{{}, {1}}, f: bin((*autograd.Tensor).Mul)},
		{name: "neg", shapes: [][]int{{5}}, f: un((*autograd.Tensor).Neg)},
		{name: "exp", shapes: [][]int{{2, 3}}, f: un((*autograd.Tensor).Exp)},
		{name: "log", shapes: [][]int{{2, 3}}, lo: 0.2, hi: 3, f: un((*autograd.Tensor).Log)},
		{name: "sqrt", shapes: [][]int{{4}}, lo: 0.2, hi: 3, f: un((*autograd.Tensor).Sqrt)},
		{name: "rsqrt", shapes: [][]int{{4}}, lo: 0.2, hi: 3, f: un((*autograd.Tensor).Rsqrt)},
		{name: "tanh", shapes: [][]int{{3, 3}}, f: un((*autograd.Tensor).Tanh)},
		{name: "sigmoid", shapes: [][]int{{3, 3}}, f: un((*autograd.Tensor).Sigmoid)},
		{name: "relu", shapes: [][]int{{4, 5}}, f: un((*autograd.Tensor).ReLU)},
		{name: "gelu", shapes: [][]int{{4, 5}}, f: un((*autograd.Tensor).GELU)},
		{name: "gelu_tanh", shapes: [][]int{{4, 5}}, f: un((*autograd.Tensor).GELUTanh)},
		{name: "abs", shapes: [][]int{{4, 5}}, f: un((*autograd.Tensor).Abs)},
		{name: "pow", shapes: [][]int{{6}}, lo: 0.3, hi: 2, f: un(func(a *autograd.Tensor) *autograd.Tensor { return a.Pow(2.5) })},
		{name: "scale", shapes: [][]int{{6}}, f: un(func(a *autograd.Tensor) *autograd.Tensor { return a.Scale(-3) })},
		{name: "add_scalar", shapes: [][]int{{6}}, f: un(func(a *autograd.Tensor) *autograd.Tensor { return a.AddScalar(2) })},
		{name: "reuse", shapes: [][]int{{3}}, f: un(func(a *autograd.Tensor) *autograd.Tensor { return a.Mul(a).Add(a) })},
	})
}

func TestGradReduce(t *testing.T) {
	un := func(f func(a *autograd.Tensor) *autograd.Tensor) func(*autograd.Scope, []*autograd.Tensor) *autograd.Tensor {
		return func(_ *autograd.Scope, in []*autograd.Tensor) *autograd.Tensor { return f(in[0]) }
	}
	runGradCases(t, []gradCase{
		{name: "sum_all", shapes: [][]int{{3, 4}}, f: un(func(a *autograd.Tensor) *autograd.Tensor { return a.Sum(false) })},
		{name: "sum_axis", shapes: [][]int{{3, 4, 2}}, f: un(func(a *autograd.Tensor) *autograd.Tensor { return a.Sum(false, 1) })},
		{name: "sum_keep", shapes: [][]int{{3, 4, 2}}, f: un(func(a *autograd.Tensor) *autograd.Tensor { return a.Sum(true, 0, 2) })},
		{name: "mean", shapes: [][]int{{3, 4}}, f: un(func(a *autograd.Tensor) *autograd.Tensor { return a.Mean(false, -1) })},
		{name: "max", shapes: [][]int{{3, 5}}, f: un(func(a *autograd.Tensor) *autograd.Tensor { return a.Max(false, 1) })},
		{name: "min_keep", shapes: [][]int{{3, 5}}, f: un(func(a *autograd.Tensor) *autograd.Tensor { return a.Min(true, 0) })},
		{name: "var", shapes: [][]int{{4, 5}}, f: un(func(a *autograd.Tensor) *autograd.Tensor { return a.Var(1, false, 1) })},
		{name: "var_pop_all", shapes: [][]int{{4, 5}}, f: un(func(a *autograd.Tensor) *autograd.Tensor { return a.Var(0, true) })},
		{name: "size1_dims", shapes: [][]int{{1, 3, 1}}, f: un(func(a *autograd.Tensor) *autograd.Tensor { return a.Sum(false, 0, 2) })},
	})
}

func TestGradMatMul(t *testing.T) {
	runGradCases(t, []gradCase{
		{name: "2d", shapes: [][]int{{3, 4}, {4, 5}}, f: func(_ *autograd.Scope, in []*autograd.Tensor) *autograd.Tensor { return in[0].MatMul(in[1]) }},
		{name: "batched", shapes: [][]int{{2, 3, 4}, {2, 4, 5}}, f: func(_ *autograd.Scope, in []*autograd.Tensor) *autograd.Tensor { return in[0].MatMul(in[1]) }},
		{name: "broadcast_b", shapes: [][]int{{2, 3, 4}, {4, 5}}, f: func(_ *autograd.Scope, in []*autograd.Tensor) *autograd.Tensor { return in[0].MatMul(in[1]) }},
		{name: "broadcast_batch", shapes: [][]int{{2, 1, 3, 4}, {3, 4, 2}}, f: func(_ *autograd.Scope, in []*autograd.Tensor) *autograd.Tensor { return in[0].MatMul(in[1]) }},
		{name: "transposed", shapes: [][]int{{4, 3}, {5, 4}}, f: func(_ *autograd.Scope, in []*autograd.Tensor) *autograd.Tensor {
			return in[0].T().MatMul(in[1].T())
		}},
		{name: "linear", shapes: [][]int{{2, 3, 4}, {5, 4}, {5}}, f: func(_ *autograd.Scope, in []*autograd.Tensor) *autograd.Tensor {
			return autograd.Linear(in[0], in[1], in[2])
		}},
		{name: "linear_nobias", shapes: [][]int{{3, 4}, {2, 4}}, f: func(_ *autograd.Scope, in []*autograd.Tensor) *autograd.Tensor {
			return autograd.Linear(in[0], in[1], nil)
		}},
	})
}

func TestGradShape(t *testing.T) {
	runGradCases(t, []gradCase{
		{name: "reshape", shapes: [][]int{{2, 6}}, f: func(_ *autograd.Scope, in []*autograd.Tensor) *autograd.Tensor { return in[0].Reshape(3, -1).Exp() }},
		{name: "permute", shapes: [][]int{{2, 3, 4}}, f: func(_ *autograd.Scope, in []*autograd.Tensor) *autograd.Tensor { return in[0].Permute(2, 0, 1).Exp() }},
		{name: "permute_reshape", shapes: [][]int{{2, 3, 4}}, f: func(_ *autograd.Scope, in []*autograd.Tensor) *autograd.Tensor {
			return in[0].Transpose(0, 2).Reshape(4, 6).Tanh()
		}},
		{name: "slice", shapes: [][]int{{4, 5}}, f: func(_ *autograd.Scope, in []*autograd.Tensor) *autograd.Tensor { return in[0].Slice(1, 1, 4).Exp() }},
		{name: "expand", shapes: [][]int{{3, 1}}, f: func(_ *autograd.Scope, in []*autograd.Tensor) *autograd.Tensor { return in[0].Expand(2, 3, 4).Exp() }},
		{name: "concat", shapes: [][]int{{2, 3}, {2, 2}}, f: func(_ *autograd.Scope, in []*autograd.Tensor) *autograd.Tensor {
			return autograd.Concat(1, in[0], in[1]).Exp()
		}},
		{name: "split", shapes: [][]int{{5, 3}}, f: func(_ *autograd.Scope, in []*autograd.Tensor) *autograd.Tensor {
			p := autograd.Split(in[0], 0, 2, 3)
			return p[1].Exp().Sum(false, 0).Add(p[0].Sum(false, 0))
		}},
		{name: "split_unused", shapes: [][]int{{5, 3}}, f: func(_ *autograd.Scope, in []*autograd.Tensor) *autograd.Tensor {
			return autograd.Split(in[0], 1, 1, 2)[1].Exp()
		}},
		{name: "squeeze_unsqueeze", shapes: [][]int{{3, 1, 2}}, f: func(_ *autograd.Scope, in []*autograd.Tensor) *autograd.Tensor {
			return in[0].Squeeze(1).Unsqueeze(0).Exp()
		}},
		{name: "where", shapes: [][]int{{3, 4}, {3, 4}, {4}}, f: func(_ *autograd.Scope, in []*autograd.Tensor) *autograd.Tensor {
			return autograd.Where(in[0].Gt(in[0].Scalar(0)), in[1], in[2])
		}},
		{name: "masked_fill", shapes: [][]int{{3, 4}}, f: func(_ *autograd.Scope, in []*autograd.Tensor) *autograd.Tensor {
			return autograd.MaskedFill(in[0].Exp(), in[0].Lt(in[0].Scalar(0)), -1)
		}},
	})
}
