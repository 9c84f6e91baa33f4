package kernels

import (
	"testing"
)

// BenchmarkReduceColumnsHalf: the bias gradient of a 4096×1024 BF16
// activation, read as 16-bit ("half") or widened whole first ("widen").
func BenchmarkReduceColumnsHalf(b *testing.B) {
	const rows, cols = 4096, 1024
	src := make([]uint16, rows*cols)
	for i := range src {
		src[i] = halfOf(true, float32(i%97)-48)
	}
	sl := Layout{Shape: []int{rows, cols}}
	dshape := []int{1, cols}
	out := make([]float64, cols)
	store := func(i int, v float64) { out[i] = v }
	b.Run("half", func(b *testing.B) {
		for range b.N {
			ReduceColumnsHalf(RSum, dshape, src, true, sl, store)
		}
	})
	b.Run("widen", func(b *testing.B) {
		for range b.N {
			w := make([]float32, len(src))
			BF16ToF32(w, src)
			Reduce(RSum, 0, dshape, w, sl, store)
		}
	})
}
