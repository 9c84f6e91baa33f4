package autograd

import "github.com/headroom-ml/headroom/dtype"

// Operand dtypes. The tensors an op combines — both sides of an
// elementwise op, a product's operands, a layer's input and its weights —
// have one dtype. A mismatch is an *Error naming the op, both dtypes and
// where each tensor came from (PyTorch's "expected scalar type Float but
// found Double"), never a silent promotion: an F64 input to an F32 model
// would otherwise make every activation downstream F64, twice the memory,
// and an I64 tensor would quietly become a float. Integer tensors mix with
// integer tensors only (the wider one wins), and only in the ops that take
// integers (elementwise arithmetic and comparisons, Sum, Max, Min,
// ArgMax, the views and copies); the float ops (products, convolutions,
// attention, norms, activations, Mean, Var, softmax, pooling, dropout,
// losses) want floats.
//
// Two places combine float dtypes on purpose, and there the wider float
// wins (F32 for F16 with BF16):
//
//   - Under Scope.Autocast, whose casts leave such pairs by design: an F32
//     residual plus a BF16 linear output, a BF16 activation normalised with
//     F32 weights. Ops that autocast casts (MatMul, Linear, Conv2d,
//     attention) see one dtype anyway.
//   - Inside a backward pass, where a gradient meets saved tensors of the
//     dtypes the forward chose. A gradient always has its tensor's dtype:
//     the engine casts one that arrives in another float dtype (addGrad:
//     the F32 gradient of that residual sum becomes BF16 where it flows
//     into the BF16 linear, as in PyTorch), so the kernels that take one
//     dtype (Gemm, attention, UnaryGrad: cuBLAS has one type for A and B)
//     get one. The forward was checked, so backward adds no new mixture.
//
// Operands whose contract takes another dtype are not compared: indices
// (I64 or I32) of the index ops and of Embedding, the integer targets of
// CrossEntropy, the condition of Where and the mask of MaskedFill, the
// running statistics of BatchNorm2d (any float dtype; F64 only with F64).

// operand is an input of an op with the name its errors give it.
type operand struct {
	what string
	t    *Tensor
}

// oneDType checks the operands of o (nil tensors are skipped) and returns
// the dtype of its result: their common dtype, the wider integer for
// integers, or, where o may mix floats (mixesFloats), the wider float.
// It fails naming both operands of the first mismatch; with float set,
// it fails for integer operands too.
func (o *op) oneDType(float bool, ops ...operand) dtype.DType {
	return o.checkDTypes(float, o.mixesFloats(), ops)
}

// exactDType is oneDType for kernels that take one float dtype only
// (convolution, attention): floats never mix, not even under autocast
// (whose casts give them one dtype) or in backward.
func (o *op) exactDType(ops ...operand) dtype.DType {
	return o.checkDTypes(true, false, ops)
}

func (o *op) checkDTypes(float, mix bool, ops []operand) dtype.DType {
	var first operand
	dt := dtype.Invalid
	for _, x := range ops {
		if x.t == nil {
			continue
		}
		switch {
		case dt == dtype.Invalid:
			first, dt = x, x.t.dt
		case x.t.dt == dt:
		case !x.t.dt.IsFloat() && !dt.IsFloat():
			dt = promote(dt, x.t.dt)
		case x.t.dt.IsFloat() && dt.IsFloat() && mix:
			dt = promote(dt, x.t.dt)
		default:
			o.mismatch(first, x)
		}
	}
	if float && dt != dtype.Invalid && !dt.IsFloat() {
		fail(o.name, "%s %v %s (%s): want a float dtype; Cast it first (x.Cast(dtype.F32))", first.what, first.t.shape, first.t.dt, first.t.origin())
	}
	return dt
}

// mismatch fails for two operands of different dtypes.
func (o *op) mismatch(a, b operand) {
	var hint string
	switch {
	case !a.t.dt.IsFloat() || !b.t.dt.IsFloat():
		hint = "integer tensors combine only with integer tensors: Cast the integer one to the float dtype first"
	case a.t.dt.IsLowPrecision() || b.t.dt.IsLowPrecision():
		hint = "Cast one to the other's dtype (Tensor.Cast), or run the step under Scope.Autocast, which mixes 16-bit activations with f32 ones"
	default:
		hint = "Cast one to the other's dtype (Tensor.Cast)"
	}
	fail(o.name, "expected one dtype, found %s %v %s (%s) and %s %v %s (%s): %s",
		a.what, a.t.shape, a.t.dt, a.t.origin(), b.what, b.t.shape, b.t.dt, b.t.origin(), hint)
}

// mixesFloats reports whether o may combine floats of different dtypes:
// under autocast and inside a backward pass (see above).
func (o *op) mixesFloats() bool {
	return o.s != nil && (o.s.autocast != dtype.Invalid || o.s.root().passes > 0)
}

// promote returns the wider of two float dtypes (F32 for F16 with BF16),
// or the wider of two integer dtypes.
func promote(a, b dtype.DType) dtype.DType {
	if a == b {
		return a
	}
	if a.IsLowPrecision() && b.IsLowPrecision() {
		return dtype.F32
	}
	rank := func(d dtype.DType) int {
		switch d {
		case dtype.F64, dtype.I64:
			return 3
		case dtype.F32, dtype.I32:
			return 2
		case dtype.F16, dtype.BF16:
			return 1
		}
		return 0
	}
	if rank(a) >= rank(b) {
		return a
	}
	return b
}

// origin says where t came from, for error messages: its name, the op
// that made it, or the label of its storage (an input of the step is
// "made by input").
func (t *Tensor) origin() string {
	switch {
	case t.name != "" || t.node != nil || t.blk == nil:
		return t.describe()
	}
	return "made by " + t.blk.Label().Creator()
}
