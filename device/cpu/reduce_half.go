package cpu

import (
	"github.com/headroom-ml/headroom/device"
	"github.com/headroom-ml/headroom/dtype"
	"github.com/headroom-ml/headroom/internal/kernels"
)

// reduceHalf runs a sum or mean over outer axes of a 16-bit src (a
// Linear's bias gradient) on its 16-bit elements, through
// kernels.ReduceColumnsHalf, and reports whether it did: false for any
// other reduction or dtype, which then widens src's extent.
func reduceHalf(op device.ReduceOp, dshape []int, src device.Operand, store func(i int, v float64)) bool {
	if !inRegister || !src.DType.IsLowPrecision() {
		return false
	}
	return kernels.ReduceColumnsHalf(int(op), dshape, dtype.AsU16(src.Block.Bytes()), src.DType == dtype.BF16, lay(src), store)
}
