package cpu

import (
	"github.com/headroom-ml/headroom/device"
	"github.com/headroom-ml/headroom/dtype"
	"github.com/headroom-ml/headroom/internal/kernels"
)

// Normalisation, softmax and loss kernels compute in F64 when their output
// is F64, else in F32 (F16 and BF16 operands converted). The statistics
// operands (mean, rstd, invstd, lse) are read and written in that same
// precision, whatever their dtype.

// set holds operands as slices of one precision (nil for absent operands),
// with the function that stores converted copies back.
type set[T kernels.Float] struct {
	s     []([]T)
	store func()
}

func set64(os ...device.Operand) set[float64] {
	g := set[float64]{s: make([][]float64, len(os))}
	for i, o := range os {
		if !o.Nil() {
			g.s[i] = s64(o)
		}
	}
	g.store = func() {
		for i, o := range os {
			if !o.Nil() {
				put64(o, g.s[i])
			}
		}
	}
	return g
}

func set32(os ...device.Operand) set[float32] {
	g := set[float32]{s: make([][]float32, len(os))}
	for i, o := range os {
		if !o.Nil() {
			g.s[i] = s32(o)
		}
	}
	g.store = func() {
		for i, o := range os {
			if !o.Nil() {
				put32(o, g.s[i])
			}
		}
	}
	return g
}

// wideOf reports whether a call with these outputs (some may be absent)
// computes in F64: when its first present output is F64.
func wideOf(os ...device.Operand) bool {
	for _, o := range os {
		if !o.Nil() {
			return wide(o)
		}
	}
	return false
}

func (kern) Softmax(dst, src device.Operand, rows, cols int, log bool) {
	if wide(dst) {
		out, in := set64(dst), set64(src)
		kernels.Softmax(out.s[0], in.s[0], rows, cols, log)
		out.store()
		return
	}
	if anyHalf(dst, src) && rowTiled(rows, cols, []device.Operand{dst, src}, nil, 1, 0, func(n int, row, _ [][]float32) {
		kernels.Softmax(row[0], row[1], n, cols, log)
	}) {
		return
	}
	out, in := set32(dst), set32(src)
	kernels.Softmax(out.s[0], in.s[0], rows, cols, log)
	out.store()
}

func (kern) SoftmaxGrad(dx, dy, y device.Operand, rows, cols int, log bool) {
	if wide(dx) {
		out, in := set64(dx), set64(dy, y)
		kernels.SoftmaxGrad(out.s[0], in.s[0], in.s[1], rows, cols, log)
		out.store()
		return
	}
	if anyHalf(dx, dy, y) && rowTiled(rows, cols, []device.Operand{dx, dy, y}, nil, 1, 0, func(n int, row, _ [][]float32) {
		kernels.SoftmaxGrad(row[0], row[1], row[2], n, cols, log)
	}) {
		return
	}
	out, in := set32(dx), set32(dy, y)
	kernels.SoftmaxGrad(out.s[0], in.s[0], in.s[1], rows, cols, log)
	out.store()
}

func (kern) LayerNorm(y, mean, rstd, x, w, b device.Operand, rows, cols int, eps float64) {
	if wide(y) {
		out, in := set64(y, mean, rstd), set64(x, w, b)
		kernels.LayerNorm(out.s[0], in.s[0], in.s[1], in.s[2], out.s[1], out.s[2], rows, cols, eps)
		out.store()
		return
	}
	if anyHalf(y, mean, rstd, x, w, b) {
		// w and b (cols values each) are widened once for all groups.
		wb := set32(w, b)
		if rowTiled(rows, cols, []device.Operand{y, x}, []device.Operand{mean, rstd}, 1, 2, func(n int, row, stat [][]float32) {
			kernels.LayerNorm(row[0], row[1], wb.s[0], wb.s[1], stat[0], stat[1], n, cols, eps)
		}) {
			return
		}
	}
	out, in := set32(y, mean, rstd), set32(x, w, b)
	kernels.LayerNorm(out.s[0], in.s[0], in.s[1], in.s[2], out.s[1], out.s[2], rows, cols, eps)
	out.store()
}

func (kern) LayerNormGrad(dx, dw, db, dy, x, w, mean, rstd device.Operand, rows, cols int) {
	if wideOf(dx, dw, db) {
		out, in := set64(dx, dw, db), set64(dy, x, w, mean, rstd)
		kernels.LayerNormGrad(out.s[0], out.s[1], out.s[2], in.s[0], in.s[1], in.s[2], in.s[3], in.s[4], rows, cols)
		out.store()
		return
	}
	if layerNormGradHalf(dx, dw, db, dy, x, w, mean, rstd, rows, cols) {
		return
	}
	out, in := set32(dx, dw, db), set32(dy, x, w, mean, rstd)
	kernels.LayerNormGrad(out.s[0], out.s[1], out.s[2], in.s[0], in.s[1], in.s[2], in.s[3], in.s[4], rows, cols)
	out.store()
}

func (kern) BatchNorm(y, mean, invstd, x, w, b, runMean, runVar device.Operand, n, c, hw int, training bool, momentum, eps float64) {
	batchNorm(y, mean, invstd, x, w, b, runMean, runVar, n, c, hw, training, false, momentum, eps)
}

func (kern) BatchNormRelu(y, mean, invstd, x, w, b, runMean, runVar device.Operand, n, c, hw int, training bool, momentum, eps float64) {
	batchNorm(y, mean, invstd, x, w, b, runMean, runVar, n, c, hw, training, true, momentum, eps)
}

// batchNorm is BatchNorm, and with relu BatchNormRelu.
func batchNorm(y, mean, invstd, x, w, b, runMean, runVar device.Operand, n, c, hw int, training, relu bool, momentum, eps float64) {
	if wide(y) {
		out, in := set64(y, mean, invstd, runMean, runVar), set64(x, w, b)
		bn := kernels.BatchNorm[float64]
		if relu {
			bn = kernels.BatchNormRelu[float64]
		}
		bn(out.s[0], in.s[0], in.s[1], in.s[2], out.s[3], out.s[4], out.s[1], out.s[2], n, c, hw, training, momentum, eps)
		out.store()
		return
	}
	if inRegister && y.DType == dtype.BF16 && sameHalf(y, x) {
		// x and y stay bfloat16; only the per-channel operands widen.
		out, in := set32(mean, invstd, runMean, runVar), set32(w, b)
		kernels.BatchNormBF16(half(y), half(x), in.s[0], in.s[1], out.s[2], out.s[3], out.s[0], out.s[1], n, c, hw, training, relu, momentum, eps)
		out.store()
		return
	}
	out, in := set32(y, mean, invstd, runMean, runVar), set32(x, w, b)
	bn := kernels.BatchNorm[float32]
	if relu {
		bn = kernels.BatchNormRelu[float32]
	}
	bn(out.s[0], in.s[0], in.s[1], in.s[2], out.s[3], out.s[4], out.s[1], out.s[2], n, c, hw, training, momentum, eps)
	out.store()
}

func (kern) BatchNormGrad(dx, dw, db, dy, x, w, mean, invstd device.Operand, n, c, hw int, training bool) {
	if wideOf(dx, dw, db) {
		out, in := set64(dx, dw, db), set64(dy, x, w, mean, invstd)
		kernels.BatchNormGrad(out.s[0], out.s[1], out.s[2], in.s[0], in.s[1], in.s[2], in.s[3], in.s[4], n, c, hw, training)
		out.store()
		return
	}
	if inRegister && dy.DType == dtype.BF16 && sameHalf(dy, x) && (dx.Nil() || sameHalf(dx, dy)) {
		out, in := set32(dw, db), set32(w, mean, invstd)
		var d []uint16
		if !dx.Nil() {
			d = half(dx)
		}
		kernels.BatchNormGradBF16(d, half(dy), half(x), out.s[0], out.s[1], in.s[0], in.s[1], in.s[2], n, c, hw, training)
		out.store()
		return
	}
	out, in := set32(dx, dw, db), set32(dy, x, w, mean, invstd)
	kernels.BatchNormGrad(out.s[0], out.s[1], out.s[2], in.s[0], in.s[1], in.s[2], in.s[3], in.s[4], n, c, hw, training)
	out.store()
}

func (kern) CrossEntropy(loss, lse, logits, target device.Operand, rows, cols, ignore int, smoothing float64) {
	t := span(ints(target), target)
	if wide(loss) {
		out, in := set64(loss, lse), set64(logits)
		kernels.CrossEntropy(out.s[0], out.s[1], in.s[0], t, rows, cols, int64(ignore), smoothing)
		out.store()
		return
	}
	out, in := set32(loss, lse), set32(logits)
	kernels.CrossEntropy(out.s[0], out.s[1], in.s[0], t, rows, cols, int64(ignore), smoothing)
	out.store()
}

func (kern) CrossEntropyGrad(dlogits, dloss, logits, lse, target device.Operand, rows, cols, ignore int, smoothing float64) {
	t := span(ints(target), target)
	if wide(dlogits) {
		out, in := set64(dlogits), set64(dloss, logits, lse)
		kernels.CrossEntropyGrad(out.s[0], in.s[0], in.s[1], in.s[2], t, rows, cols, int64(ignore), smoothing)
		out.store()
		return
	}
	out, in := set32(dlogits), set32(dloss, logits, lse)
	kernels.CrossEntropyGrad(out.s[0], in.s[0], in.s[1], in.s[2], t, rows, cols, int64(ignore), smoothing)
	out.store()
}
