package kernels

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// BenchmarkWidenRows measures packing one kc-deep B panel of nr columns
// from bfloat16 (a non-transposed B, as the forward convolution's im2col
// tile is): path=rows is widenRows, the packer packB uses; path=strip is
// what packB did before it, each depth's nr values widened into a strip
// by a call of their own and copied into the panel. Run with -count and
// compare the two paths of one process (benchstat -col /path).
func BenchmarkWidenRows(b *testing.B) {
	r := rand.New(rand.NewPCG(3, 4))
	for _, sz := range [][2]int{{256, 16}, {384, 32}} {
		kc, nr := sz[0], sz[1]
		ld := 4 * nr
		h := gemmHalfBits(r, kc*ld, true)
		d := make([]float32, kc*nr)
		strip := make([]float32, nr)
		run := func(b *testing.B, f func()) {
			for b.Loop() {
				f()
			}
			b.ReportMetric(float64(kc*nr*b.N)/b.Elapsed().Seconds()/1e9, "Gvalues/s")
		}
		b.Run(fmt.Sprintf("kc=%d/nr=%d/path=strip", kc, nr), func(b *testing.B) {
			run(b, func() {
				for p := range kc {
					halfToF32(strip, h[p*ld:p*ld+nr], true)
					copy(d[p*nr:p*nr+nr], strip)
				}
			})
		})
		b.Run(fmt.Sprintf("kc=%d/nr=%d/path=rows", kc, nr), func(b *testing.B) {
			run(b, func() { widenRows(d, h, 0, ld, kc, nr, true) })
		})
	}
}
