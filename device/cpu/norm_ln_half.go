package cpu

import (
	"github.com/headroom-ml/headroom/device"
	"github.com/headroom-ml/headroom/dtype"
	"github.com/headroom-ml/headroom/internal/kernels"
)

// layerNormGradHalf runs LayerNormGrad on dense dy, x and dx (dx may be
// absent) of one 16-bit dtype through kernels.LayerNormGradHalf, which
// widens a row at a time in per-worker scratch; only w, mean, rstd, dw
// and db (cols or rows values each) are widened whole. It reports false,
// doing nothing, for other operands or rows over
// kernels.LayerNormHalfCols.
func layerNormGradHalf(dx, dw, db, dy, x, w, mean, rstd device.Operand, rows, cols int) bool {
	if !inRegister || cols > kernels.LayerNormHalfCols || !sameHalf(dy, x) || (!dx.Nil() && !sameHalf(dx, dy)) {
		return false
	}
	var hx []uint16
	if !dx.Nil() {
		hx = half(dx)
	}
	out, in := set32(dw, db), set32(w, mean, rstd)
	kernels.LayerNormGradHalf(hx, half(dy), half(x), dy.DType == dtype.BF16,
		out.s[0], out.s[1], in.s[0], in.s[1], in.s[2], rows, cols)
	out.store()
	return true
}
