package kernels

import (
	"fmt"
	"testing"
)

// BenchmarkNarrowRuns narrows 1M float32 values to bfloat16 in runs of
// 16 to 1M values, one f32ToBF16 call per run, as a 16-bit convolution's
// epilogue (storeY) narrows its output row by row: it measures the cost
// of each call's set-up as well as the conversion (ns/elem).
func BenchmarkNarrowRuns(b *testing.B) {
	src := make([]float32, 1<<20)
	dst := make([]uint16, 1<<20)
	for i := range src {
		src[i] = float32(i) * 0.001
	}
	for _, cols := range []int{16, 64, 256, 1024, 1 << 20} {
		b.Run(fmt.Sprint(cols), func(b *testing.B) {
			for b.Loop() {
				for at := 0; at < len(src); at += cols {
					f32ToBF16(dst[at:at+cols], src[at:at+cols])
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(len(src)), "ns/elem")
		})
	}
}
