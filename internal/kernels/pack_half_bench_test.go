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

// BenchmarkPackAHalf measures packing one full kc-deep A panel of this
// machine's float32 kernel from bfloat16 rows (the forward convolution's
// weights): path=scatter is packRowsHalf (each row widened whole, then
// stored mr apart by a Go loop), path=wide is packRowsHalfWide (blocks of
// depths widened into the strip, interleaved by the kernel's packer), the
// strip as long as the driver's (max(kc, mc)).
func BenchmarkPackAHalf(b *testing.B) {
	kn := sgemm
	const kc = 256
	r := rand.New(rand.NewPCG(5, 6))
	ld := kc + 64
	src := operand[float32]{h: gemmHalfBits(r, kn.mr*ld, true), bf16: true}
	d := make([]float32, kn.mr*kc)
	strip := make([]float32, max(kc, kn.mc))
	run := func(b *testing.B, f func()) {
		for b.Loop() {
			f()
		}
		b.ReportMetric(float64(kn.mr*kc*b.N)/b.Elapsed().Seconds()/1e9, "Gvalues/s")
	}
	name := fmt.Sprintf("kernel=%s/kc=%d", kn.name, kc)
	b.Run(name+"/path=scatter", func(b *testing.B) {
		run(b, func() { packRowsHalf(d, src, strip, 0, ld, kc, kn.mr, kn.mr, 1) })
	})
	b.Run(name+"/path=wide", func(b *testing.B) {
		run(b, func() { packRowsHalfWide(&kn, d, src, strip, 0, ld, kc, 1) })
	})
}

// BenchmarkWidenCols measures packing one kc-deep panel of nr columns of
// a transposed bfloat16 B (the weight gradient's im2col tile, colᵀ):
// path=cols is widenCols, the packer packB uses; path=strip is what packB
// did before it, each column's kc values widened into a strip by a call
// of their own and stored nr apart by a Go loop.
func BenchmarkWidenCols(b *testing.B) {
	r := rand.New(rand.NewPCG(7, 8))
	for _, sz := range [][2]int{{256, 16}, {384, 32}} {
		kc, nr := sz[0], sz[1]
		ld := kc + 64
		h := gemmHalfBits(r, nr*ld, true)
		d := make([]float32, kc*nr)
		strip := make([]float32, kc)
		run := func(b *testing.B, f func()) {
			for b.Loop() {
				f()
			}
			b.ReportMetric(float64(kc*nr*b.N)/b.Elapsed().Seconds()/1e9, "Gvalues/s")
		}
		b.Run(fmt.Sprintf("kc=%d/nr=%d/path=strip", kc, nr), func(b *testing.B) {
			run(b, func() {
				for c := range nr {
					halfToF32(strip, h[c*ld:c*ld+kc], true)
					for p, v := range strip {
						d[p*nr+c] = v
					}
				}
			})
		})
		b.Run(fmt.Sprintf("kc=%d/nr=%d/path=cols", kc, nr), func(b *testing.B) {
			run(b, func() { widenCols(d, h, 0, ld, kc, nr, true) })
		})
	}
}
