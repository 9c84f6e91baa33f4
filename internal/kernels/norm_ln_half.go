package kernels

// LayerNormHalfCols is the longest row LayerNormGradHalf takes: its
// per-worker scratch is three float32 rows, 48 KiB at most.
const LayerNormHalfCols = 4096

// lnRowBufs holds the per-worker row scratch of LayerNormGradHalf.
var lnRowBufs freeList[convBuf]

// halfWiden returns the bulk 16-bit to float32 conversion of one
// goroutine for bfloat16 (bf16) or float16.
func halfWiden(bf16 bool) func(dst []float32, src []uint16) {
	if bf16 {
		return bf16ToF32
	}
	return f16ToF32
}

// halfNarrow is halfWiden the other way (round to nearest even).
func halfNarrow(bf16 bool) func(dst []uint16, src []float32) {
	if bf16 {
		return f32ToBF16
	}
	return f32ToF16
}

// LayerNormGradHalf is LayerNormGrad for 16-bit dx, dy and x (bfloat16
// when bf16, else float16; dx may be nil) with float32 w, mean, rstd, dw
// and db: each worker widens one row of dy and x at a time into its
// scratch, runs LayerNormGrad's float32 row and narrows the row of dx,
// so no float32 copy of a whole operand exists. The rows are split as
// LayerNormGrad splits them and widening is exact, so every output has
// the bits LayerNormGrad gives on the widened operands. cols must be at
// most LayerNormHalfCols.
func LayerNormGradHalf(dx, dy, x []uint16, bf16 bool, dw, db, w, mean, rstd []float32, rows, cols int) {
	if cols > LayerNormHalfCols {
		panic("kernels: LayerNormGradHalf row over LayerNormHalfCols")
	}
	widen, narrow := halfWiden(bf16), halfNarrow(bf16)
	lnGradRows(dw, db, rows, cols, dx != nil, func(lo, hi int, aw, ab []float64) {
		buf := lnRowBufs.get()
		defer lnRowBufs.put(buf)
		s := scratchView[float32](&buf.b, 3*cols)
		g, xr, d := s[:cols], s[cols:2*cols], s[2*cols:]
		if dx == nil {
			d = nil
		}
		for r := lo; r < hi; r++ {
			o := r * cols
			widen(g, dy[o:o+cols])
			widen(xr, x[o:o+cols])
			layerNormGradRow(d, g, xr, w, aw, ab, float64(mean[r]), float64(rstd[r]))
			if dx != nil {
				narrow(dx[o:o+cols], d)
			}
		}
	})
}
