package cpu

import (
	"github.com/headroom-ml/headroom/device"
	"github.com/headroom-ml/headroom/dtype"
	"github.com/headroom-ml/headroom/internal/kernels"
)

// geluHalf runs the tanh GELU on dense BF16 dst and src of one length in
// registers (kernels.GeluTanhBF16) and reports whether it did; other
// operands take the tile path.
func geluHalf(op device.UnaryOp, dst, src device.Operand) bool {
	if op != device.GeluTanh || !inRegister || dst.DType != dtype.BF16 || !sameHalf(dst, src) {
		return false
	}
	kernels.GeluTanhBF16(half(dst), half(src))
	return true
}

// geluGradHalf is geluHalf for the gradient (kernels.GeluTanhGradBF16).
func geluGradHalf(op device.UnaryOp, dx, dy, x device.Operand) bool {
	if op != device.GeluTanh || !inRegister || dx.DType != dtype.BF16 || !sameHalf(dx, dy, x) {
		return false
	}
	kernels.GeluTanhGradBF16(half(dx), half(dy), half(x))
	return true
}
