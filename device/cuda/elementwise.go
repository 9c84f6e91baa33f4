package cuda

import (
	"errors"
	"fmt"

	"github.com/headroom-ml/headroom/device"
	"github.com/headroom-ml/headroom/internal/kernels"
)

// The elementwise kernels of kernels/elementwise.cu: each is one grid-stride
// launch over the output's elements, with every operand's Layout coalesced
// (layouts) so that dense operands take the kernels' rank-1 fast path.

func (k *kern) Copy(dst, src device.Operand) {
	k.sameShape("copy", dst, src)
	n := dst.Len()
	if n == 0 {
		return
	}
	l := k.layouts("copy", dst.Shape, dst, src)
	k.launch("copy_"+Suffix(dst.DType)+"_"+Suffix(src.DType), Linear(n), k.Ptr(dst), l[0], k.Ptr(src), l[1], I64(int64(n)))
}

func (k *kern) Fill(dst device.Operand, v float64) {
	n := dst.Len()
	if n == 0 {
		return
	}
	l := k.layouts("fill", dst.Shape, dst)
	k.launch("fill_"+Suffix(dst.DType), Linear(n), k.Ptr(dst), l[0], I64(int64(n)), F64(v))
}

func (k *kern) Unary(op device.UnaryOp, dst, src device.Operand, arg float64) {
	if op >= device.NumUnaryOps {
		k.bad("unary", "unknown op %d", op)
	}
	k.sameDType("unary "+op.String(), dst, src)
	n := dst.Len()
	if n == 0 {
		return
	}
	l := k.layouts("unary "+op.String(), dst.Shape, dst, src)
	k.launch("unary_"+Suffix(dst.DType), Linear(n), k.Ptr(dst), l[0], k.Ptr(src), l[1], I64(int64(n)), Int(int(op)), F64(arg))
}

func (k *kern) UnaryGrad(op device.UnaryOp, dx, dy, x, y device.Operand, arg float64) {
	name := "unary_grad " + op.String()
	if op >= device.NumUnaryOps {
		k.bad("unary_grad", "unknown op %d", op)
	}
	k.floatDType(name, dx)
	for _, o := range []device.Operand{dy, x, y} {
		if !o.Nil() {
			k.sameDType(name, dx, o)
			k.sameLen(name, dx, o)
			k.contiguous(name, o)
		}
	}
	k.contiguous(name, dx)
	n := dx.Len()
	if n == 0 {
		return
	}
	k.launch("unary_grad_"+Suffix(dx.DType), Linear(n), k.Ptr(dx), k.Ptr(dy), k.Ptr(x), k.Ptr(y), I64(int64(n)), Int(int(op)), F64(arg))
}

func (k *kern) Binary(op device.BinaryOp, dst, a, b device.Operand) {
	if op >= device.NumBinaryOps {
		k.bad("binary", "unknown op %d", op)
	}
	name := "binary " + op.String()
	// Autocast and backward mix float dtypes, integers mix (the wider
	// wins): mixed operands take the kernel that reads each by its dtype.
	mixed := a.DType != dst.DType || b.DType != dst.DType
	if !a.DType.Valid() || !b.DType.Valid() {
		k.bad(name, "operand dtypes %s and %s", a.DType, b.DType)
	}
	n := dst.Len()
	if n == 0 {
		return
	}
	l := k.layouts(name, dst.Shape, dst, a, b)
	if mixed {
		k.launch("binary_mixed_"+Suffix(dst.DType), Linear(n), k.Ptr(dst), l[0], k.Ptr(a), Int(int(a.DType)), l[1],
			k.Ptr(b), Int(int(b.DType)), l[2], I64(int64(n)), Int(int(op)))
		return
	}
	k.launch("binary_"+Suffix(dst.DType), Linear(n), k.Ptr(dst), l[0], k.Ptr(a), l[1], k.Ptr(b), l[2], I64(int64(n)), Int(int(op)))
}

func (k *kern) Axpy(alpha float64, x, y device.Operand) {
	k.floatDType("axpy", y)
	k.sameDType("axpy", y, x)
	k.sameShape("axpy", y, x)
	k.contiguous("axpy", y)
	n := y.Len()
	if n == 0 {
		return
	}
	l := k.layouts("axpy", x.Shape, x)
	k.launch("axpy_"+Suffix(y.DType), Linear(n), k.Ptr(x), l[0], k.Ptr(y), I64(int64(n)), F64(alpha))
}

func (k *kern) Where(dst, cond, a, b device.Operand) {
	k.sameDType("where", dst, a)
	k.sameDType("where", dst, b)
	if !cond.DType.Valid() {
		k.bad("where", "condition dtype %s", cond.DType)
	}
	n := dst.Len()
	if n == 0 {
		return
	}
	l := k.layouts("where", dst.Shape, dst, cond, a, b)
	k.launch("where_"+Suffix(dst.DType), Linear(n), k.Ptr(dst), l[0], k.Ptr(cond), Int(int(cond.DType)), l[1],
		k.Ptr(a), l[2], k.Ptr(b), l[3], I64(int64(n)))
}

// sameDType panics unless b has a's dtype.
func (k *kern) sameDType(op string, a, b device.Operand) {
	if a.DType != b.DType {
		k.bad(op, "operands of dtypes %s and %s, want one dtype", a.DType, b.DType)
	}
}

// floatDType panics unless o has a float dtype.
func (k *kern) floatDType(op string, o device.Operand) {
	if !o.DType.IsFloat() {
		k.bad(op, "dtype %s, want F64, F32, F16 or BF16", o.DType)
	}
}

// sameLen panics unless b has a's length.
func (k *kern) sameLen(op string, a, b device.Operand) {
	if a.Len() != b.Len() {
		k.bad(op, "operands of %d and %d elements (shapes %v, %v), want one length", a.Len(), b.Len(), a.Shape, b.Shape)
	}
}

// contiguous panics unless o is dense in row-major order.
func (k *kern) contiguous(op string, o device.Operand) {
	if !o.Contiguous() {
		k.bad(op, "operand %v with strides %v is not contiguous", o.Shape, o.Strides)
	}
}

// maxRank is the rank a kernel Layout holds (common.cuh).
const maxRank = 8

// stridesOf returns o's strides, dense ones when o.Strides is nil.
func stridesOf(o device.Operand) []int {
	if o.Strides == nil {
		return kernels.Dense(o.Shape)
	}
	return o.Strides
}

// coalesce simplifies the iteration of shape by operands with the given
// strides without changing which element each row-major linear index
// reaches: it drops size-1 dimensions and merges a dimension into the next
// one where every operand steps through both as one (stride[i] =
// stride[i+1]·shape[i+1]). Operands dense over shape end as one dimension of
// stride 1, the kernels' fast path.
func coalesce(shape []int, strides ...[]int) ([]int, [][]int) {
	var sh []int
	st := make([][]int, len(strides))
	for i, s := range shape {
		if s == 1 {
			continue
		}
		last := len(sh) - 1
		merge := last >= 0
		for j := range strides {
			if merge && st[j][last] != strides[j][i]*s {
				merge = false
			}
		}
		if merge {
			sh[last] *= s
			for j := range strides {
				st[j][last] = strides[j][i]
			}
			continue
		}
		sh = append(sh, s)
		for j := range strides {
			st[j] = append(st[j], strides[j][i])
		}
	}
	return sh, st
}

// layouts returns the Layout arguments of operands iterated over shape (the
// output's), coalesced together; each operand's strides must have shape's
// rank. It panics with a message naming op when the coalesced rank passes
// maxRank.
func (k *kern) layouts(op string, shape []int, ops ...device.Operand) []Arg {
	strides := make([][]int, len(ops))
	for j, o := range ops {
		strides[j] = stridesOf(o)
		if len(strides[j]) != len(shape) {
			k.bad(op, "operand %d has rank %d (strides %v), want rank %d of shape %v", j, len(strides[j]), o.Strides, len(shape), shape)
		}
	}
	sh, st := coalesce(shape, strides...)
	if len(sh) > maxRank {
		k.bad(op, "shape %v with strides %v needs %d dimensions after merging, at most %d fit a kernel layout", shape, strides, len(sh), maxRank)
	}
	args := make([]Arg, len(ops))
	for j := range ops {
		args[j] = Lay(device.Operand{Shape: sh, Strides: st[j]})
	}
	return args
}

// errBadOperands is the cause of the *device.KernelError raised for
// operands a kernel cannot take.
var errBadOperands = errors.New("bad operands")

// bad raises a *device.KernelError naming the cuda op that got bad
// operands, what they were and what was expected.
func (k *kern) bad(op, format string, args ...any) {
	k.g.raise(op, fmt.Errorf("%w: %s", errBadOperands, fmt.Sprintf(format, args...)))
}

// sameShape panics unless a and b have the same shape.
func (k *kern) sameShape(op string, a, b device.Operand) {
	if len(a.Shape) != len(b.Shape) {
		k.bad(op, "shapes %v and %v differ", a.Shape, b.Shape)
	}
	for i := range a.Shape {
		if a.Shape[i] != b.Shape[i] {
			k.bad(op, "shapes %v and %v differ", a.Shape, b.Shape)
		}
	}
}
