package kernels

// columnHalfChunk is the most elements of a 16-bit row that
// ReduceColumnsHalf widens at once, into a float32 array on the worker's
// stack (2 KiB).
const columnHalfChunk = 512

// ReduceColumnsHalf is Reduce's sum or mean over outer axes (columnSum's
// case: the kept elements one contiguous block of at least columnSumMin
// at every reduced position, as a Linear's bias gradient) for a 16-bit
// src (bfloat16 when bf16, else float16), read as 16-bit: each worker
// widens its columns of a row columnHalfChunk at a time on its stack, so
// no float32 copy of src exists. Widening is exact and the float64 sums
// take the same additions in the same order as Reduce on the widened
// src, so the results are bit for bit the same. It does nothing and
// reports false for any other reduction.
func ReduceColumnsHalf(op int, dshape []int, src []uint16, bf16 bool, sl Layout, store func(i int, v float64)) bool {
	keepShape, keepStr, redShape, redStr := splitAxes(dshape, sl)
	count, k := columnBlock(op, keepShape, keepStr, redShape)
	if k == 0 {
		return false
	}
	red := Layout{Off: sl.Off, Shape: redShape, Strides: redStr}
	columnSumRows(op == RMean, count, k, red, store, func(a []float64, lo int, rows []int) {
		var buf [columnHalfChunk]float32
		for c0 := 0; c0 < len(a); c0 += columnHalfChunk {
			w := buf[:min(columnHalfChunk, len(a)-c0)]
			ac := a[c0 : c0+len(w)]
			for _, p := range rows {
				h := src[p+lo+c0 : p+lo+c0+len(w)]
				if bf16 {
					accBF16(ac, h) // the same additions, widened in registers
					continue
				}
				f16ToF32(w, h)
				for j, v := range w {
					ac[j] += float64(v)
				}
			}
		}
	})
	return true
}
