package conformance

import (
	"github.com/headroom-ml/headroom/autograd"
)

type fn = func(e Env, x []*autograd.Tensor) *autograd.Tensor

// cases are the ops of the MLP and transformer path, with small shapes.
func cases() []opCase {
	var cs []opCase
	cs = append(cs, matmulCases()...)
	cs = append(cs, unaryCases()...)
	cs = append(cs, binaryCases()...)
	cs = append(cs, reduceCases()...)
	cs = append(cs, nnCases()...)
	cs = append(cs, viewCases()...)
	return cs
}

func matmulCases() []opCase {
	mm := func(e Env, x []*autograd.Tensor) *autograd.Tensor { return x[0].MatMul(x[1]) }
	lin := func(e Env, x []*autograd.Tensor) *autograd.Tensor { return autograd.Linear(x[0], x[1], x[2]) }
	return []opCase{
		{name: "matmul", ins: []input{in(grad, 3, 4), in(grad, 4, 5)}, f: mm, autocast: true},
		{name: "matmul_batched", ins: []input{in(grad, 2, 3, 4), in(grad, 2, 4, 5)}, f: mm, autocast: true},
		{name: "bmm", ins: []input{in(grad, 2, 2, 3, 4), in(grad, 2, 2, 4, 5)}, autocast: true,
			f: func(e Env, x []*autograd.Tensor) *autograd.Tensor { return autograd.BMM(x[0], x[1]) }},
		{name: "matmul_broadcast", ins: []input{in(grad, 2, 3, 4), in(grad, 4, 5)}, f: mm, autocast: true},
		{name: "matmul_transposed", ins: []input{in(grad, 4, 3), in(grad, 5, 4)}, autocast: true,
			f: func(e Env, x []*autograd.Tensor) *autograd.Tensor { return x[0].T().MatMul(x[1].T()) }},
		{name: "linear", ins: []input{in(grad, 3, 4), in(grad, 5, 4), in(grad, 5)}, f: lin, autocast: true},
		{name: "linear_3d", ins: []input{in(grad, 2, 3, 4), in(grad, 5, 4), in(grad, 5)}, f: lin, autocast: true},
		// Past the direct loops: the bias goes through the packed GEMM's store.
		{name: "linear_blocked", ins: []input{in(grad, 2, 20, 24), in(grad, 40, 24), in(grad, 40)}, f: lin, autocast: true},
		{name: "linear_nobias", ins: []input{in(grad, 3, 4), in(grad, 5, 4)}, autocast: true,
			f: func(e Env, x []*autograd.Tensor) *autograd.Tensor { return autograd.Linear(x[0], x[1], nil) }},
	}
}

func unaryCases() []opCase {
	u := func(name string, k kind, f func(t *autograd.Tensor) *autograd.Tensor) opCase {
		return opCase{name: name, ins: []input{in(k, 3, 5)}, f: func(e Env, x []*autograd.Tensor) *autograd.Tensor { return f(x[0]) }}
	}
	type T = autograd.Tensor
	return []opCase{
		u("neg", grad, (*T).Neg), u("abs", grad, (*T).Abs), u("exp", grad, (*T).Exp),
		u("log", positive, (*T).Log), u("sqrt", positive, (*T).Sqrt), u("rsqrt", positive, (*T).Rsqrt),
		u("tanh", grad, (*T).Tanh), u("sigmoid", grad, (*T).Sigmoid), u("relu", grad, (*T).ReLU),
		u("gelu", grad, (*T).GELU), u("gelu_tanh", grad, (*T).GELUTanh),
		u("pow", positive, func(t *T) *T { return t.Pow(1.5) }),
		u("scale", grad, func(t *T) *T { return t.Scale(-2.5) }),
		u("add_scalar", grad, func(t *T) *T { return t.AddScalar(0.75) }),
		u("cast", grad, func(t *T) *T { return t.Cast(t.DType()).Mul(t) }),
	}
}

func binaryCases() []opCase {
	b := func(name string, kb kind, f func(a, b *autograd.Tensor) *autograd.Tensor) opCase {
		return opCase{name: name, ins: []input{in(grad, 2, 3, 4), in(kb, 3, 1)},
			f: func(e Env, x []*autograd.Tensor) *autograd.Tensor { return f(x[0], x[1]) }}
	}
	type T = autograd.Tensor
	return []opCase{
		b("add", grad, (*T).Add), b("sub", grad, (*T).Sub), b("mul", grad, (*T).Mul), b("div", positive, (*T).Div),
		b("maximum", distinct, (*T).Maximum), b("minimum", distinct, (*T).Minimum),
		{name: "add_both_broadcast", ins: []input{in(grad, 2, 1, 4), in(grad, 3, 1)},
			f: func(e Env, x []*autograd.Tensor) *autograd.Tensor { return x[0].Add(x[1]) }},
		{name: "where", ins: []input{in(grad, 2, 3, 4), in(grad, 3, 1), in(constant, 4)},
			f: func(e Env, x []*autograd.Tensor) *autograd.Tensor {
				return autograd.Where(x[0].Gt(x[2]), x[0], x[1])
			}},
		{name: "masked_fill", ins: []input{in(grad, 3, 4), in(constant, 4)},
			f: func(e Env, x []*autograd.Tensor) *autograd.Tensor {
				return autograd.MaskedFill(x[0], x[1].Lt(x[1].Scalar(0)), -3)
			}},
	}
}

func reduceCases() []opCase {
	r := func(name string, k kind, f func(t *autograd.Tensor) *autograd.Tensor) opCase {
		return opCase{name: name, ins: []input{in(k, 2, 3, 4)}, f: func(e Env, x []*autograd.Tensor) *autograd.Tensor { return f(x[0]) }}
	}
	type T = autograd.Tensor
	return []opCase{
		r("sum_all", grad, func(t *T) *T { return t.Sum(false) }),
		r("sum_axis", grad, func(t *T) *T { return t.Sum(true, 1) }),
		r("sum_axes", grad, func(t *T) *T { return t.Sum(false, 0, 2) }),
		r("mean", grad, func(t *T) *T { return t.Mean(false, -1) }),
		r("max", distinct, func(t *T) *T { return t.Max(false, 1) }),
		r("min", distinct, func(t *T) *T { return t.Min(true, -1) }),
		r("var", grad, func(t *T) *T { return t.Var(1, false, -1) }),
		r("argmax", distinct, func(t *T) *T { return t.ArgMax(-1, false) }),
	}
}

func nnCases() []opCase {
	type T = autograd.Tensor
	one := func(f func(x []*T) *T) fn { return func(e Env, x []*T) *T { return f(x) } }
	ce := func(o autograd.CEOptions) fn {
		return one(func(x []*T) *T { return autograd.CrossEntropy(x[0], x[1], o) })
	}
	sdpa := func(causal bool) fn {
		return one(func(x []*T) *T { return autograd.ScaledDotProductAttention(x[0], x[1], x[2], causal) })
	}
	qkv := []input{in(grad, 1, 2, 5, 4), in(grad, 1, 2, 5, 4), in(grad, 1, 2, 5, 4)}
	return []opCase{
		{name: "softmax", ins: []input{in(grad, 3, 6)}, f: one(func(x []*T) *T { return autograd.Softmax(x[0], -1) })},
		{name: "softmax_dim0", ins: []input{in(grad, 4, 3)}, f: one(func(x []*T) *T { return autograd.Softmax(x[0], 0) })},
		{name: "log_softmax", ins: []input{in(grad, 2, 4, 3)}, f: one(func(x []*T) *T { return autograd.LogSoftmax(x[0], 1) })},
		{name: "layer_norm", ins: []input{in(grad, 2, 3, 8), in(grad, 8), in(grad, 8)},
			f: one(func(x []*T) *T { return autograd.LayerNorm(x[0], x[1], x[2], 1e-5) })},
		{name: "layer_norm_noaffine", ins: []input{in(grad, 4, 6)},
			f: one(func(x []*T) *T { return autograd.LayerNorm(x[0], nil, nil, 1e-5) })},
		{name: "cross_entropy", ins: []input{in(grad, 6, 5), idx(5, 6)}, f: ce(autograd.CEOptions{})},
		{name: "cross_entropy_ignore_smooth", ins: []input{in(grad, 6, 5), tgt(5, 6)},
			f: ce(autograd.CEOptions{Ignore: true, IgnoreIndex: -100, LabelSmoothing: 0.1})},
		{name: "cross_entropy_sum", ins: []input{in(grad, 6, 5), tgt(5, 6)},
			f: ce(autograd.CEOptions{Ignore: true, IgnoreIndex: -100, Reduction: "sum"})},
		{name: "cross_entropy_none", ins: []input{in(grad, 6, 5), idx(5, 6)}, f: ce(autograd.CEOptions{Reduction: "none", LabelSmoothing: 0.2})},
		{name: "embedding", ins: []input{in(grad, 7, 4), idx(7, 2, 5)},
			f: one(func(x []*T) *T { return autograd.Embedding(x[0], x[1]) })},
		{name: "index_select", ins: []input{in(grad, 3, 6), idx(6, 8)},
			f: one(func(x []*T) *T { return autograd.IndexSelect(x[0], 1, x[1]) })},
		{name: "dropout", ins: []input{in(grad, 4, 8)},
			f: one(func(x []*T) *T { return autograd.Dropout(x[0], 0.3, autograd.NewGenerator(7), true) })},
		{name: "attention", ins: qkv, f: sdpa(false), autocast: true},
		{name: "attention_causal", ins: qkv, f: sdpa(true), autocast: true},
	}
}

func viewCases() []opCase {
	type T = autograd.Tensor
	one := func(f func(x []*T) *T) fn { return func(e Env, x []*T) *T { return f(x) } }
	return []opCase{
		{name: "reshape_matmul", ins: []input{in(grad, 2, 3, 4), in(grad, 4, 3)}, autocast: true,
			f: one(func(x []*T) *T { return x[0].Reshape(6, 4).MatMul(x[1]) })},
		{name: "permute_mul", ins: []input{in(grad, 2, 3, 4), in(grad, 4, 2, 3)},
			f: one(func(x []*T) *T { return x[0].Permute(2, 0, 1).Mul(x[1]) })},
		{name: "transpose_softmax", ins: []input{in(grad, 3, 5)},
			f: one(func(x []*T) *T { return autograd.Softmax(x[0].Transpose(0, 1), -1) })},
		{name: "slice_exp", ins: []input{in(grad, 3, 6)},
			f: one(func(x []*T) *T { return x[0].Slice(1, 1, 4).Exp() })},
		{name: "contiguous", ins: []input{in(grad, 3, 4)},
			f: one(func(x []*T) *T { return x[0].T().Contiguous().Tanh() })},
		{name: "expand_mul", ins: []input{in(grad, 3, 1), in(grad, 3, 4)},
			f: one(func(x []*T) *T { return x[0].Expand(3, 4).Mul(x[1]) })},
		{name: "concat_split", ins: []input{in(grad, 2, 3), in(grad, 2, 2)},
			f: one(func(x []*T) *T {
				c := autograd.Concat(1, x[0], x[1])
				p := autograd.Split(c, 1, 4, 1)
				return p[0].Mul(p[0]).Sum(false, 1).Add(p[1].Sum(false, 1))
			})},
		{name: "to_host_and_back", ins: []input{in(grad, 3, 4)},
			f: func(e Env, x []*T) *T { return x[0].To(e.Host).Exp().To(x[0].Device()).Mul(x[0]) }},
	}
}
