package cuda

import (
	"github.com/headroom-ml/headroom/device"
	"github.com/headroom-ml/headroom/dtype"
)

// Row kernels (softmax, layer norm, cross entropy) run one block per row,
// at most rowBlocks blocks striding over the rows (kernels/softmax.cu,
// norm.cu, loss.cu); a block has a thread per column, rounded up to whole
// warps, at most rowThreads (then threads stride over the columns).
const (
	rowThreads = 256
	rowBlocks  = 1 << 16
)

// rowsLaunch is the launch of a row kernel over rows rows of cols columns.
func rowsLaunch(rows, cols int) Launch {
	threads := min(rowThreads, max(32, (cols+31)/32*32))
	return Launch{Grid: [3]uint32{uint32(max(1, min(rows, rowBlocks))), 1, 1}, Block: [3]uint32{uint32(threads), 1, 1}}
}

// computeDType is the dtype a kernel computes float operands of dt in:
// F64 for F64, F32 otherwise.
func computeDType(dt dtype.DType) dtype.DType {
	if dt == dtype.F64 {
		return dtype.F64
	}
	return dtype.F32
}

// sameFloat checks that every operand has the float dtype of the first
// (nil-Block operands are skipped) and returns that dtype.
func (k *kern) sameFloat(op string, os ...device.Operand) dtype.DType {
	dt := os[0].DType
	if !dt.IsFloat() {
		k.bad(op, "operand of dtype %s: want F64, F32, F16 or BF16", dt)
	}
	for _, o := range os[1:] {
		if !o.Nil() && o.DType != dt {
			k.bad(op, "operands of dtypes %s and %s: want one dtype", dt, o.DType)
		}
	}
	return dt
}

// statSuffix names the (T, S) variant of a kernel whose statistics
// operand has dtype s for float operands of dtype t: S must be the
// compute dtype of t or t itself.
func (k *kern) statSuffix(op string, t, s dtype.DType) string {
	switch c := computeDType(t); {
	case s == c || s == t:
	case c == t:
		k.bad(op, "statistics of dtype %s for %s operands: want %s", s, t, c)
	default:
		k.bad(op, "statistics of dtype %s for %s operands: want %s or %s", s, t, c, t)
	}
	return Suffix(t) + "_" + Suffix(s)
}

// Softmax runs softmax_T (kernels/softmax.cu).
func (k *kern) Softmax(dst, src device.Operand, rows, cols int, log bool) {
	dt := k.sameFloat("Softmax", dst, src)
	if rows*cols == 0 {
		return
	}
	k.launch("softmax_"+Suffix(dt), rowsLaunch(rows, cols), k.Ptr(dst), k.Ptr(src), I64(int64(rows)), I64(int64(cols)), Int(b2i(log)))
}

// SoftmaxGrad runs softmax_grad_T (kernels/softmax.cu).
func (k *kern) SoftmaxGrad(dx, dy, y device.Operand, rows, cols int, log bool) {
	dt := k.sameFloat("SoftmaxGrad", dx, dy, y)
	if rows*cols == 0 {
		return
	}
	k.launch("softmax_grad_"+Suffix(dt), rowsLaunch(rows, cols), k.Ptr(dx), k.Ptr(dy), k.Ptr(y), I64(int64(rows)), I64(int64(cols)), Int(b2i(log)))
}
