package kernels

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// BenchmarkGEMMBF16 measures GFLOP/s of square products on all workers:
// float32 operands (Gemm), bfloat16 operands on the pair kernel
// (GemmHalf; where the CPU lacks AVX512_BF16 it widens instead), and
// bfloat16 operands widened to float32 while packing (the float32 kernel).
func BenchmarkGEMMBF16(b *testing.B) {
	for _, n := range []int{512, 1024} {
		s := gemmBench{m: n, n: n, k: n}
		g, la, lb, lc := s.args()
		r := rand.New(rand.NewPCG(1, 2))
		report := func(b *testing.B, f func()) {
			f()
			for b.Loop() {
				f()
			}
			b.ReportMetric(s.flops()*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
		}
		b.Run(fmt.Sprintf("in=f32/n=%d", n), func(b *testing.B) {
			x, y, c := benchF32(r, la), benchF32(r, lb), make([]float32, lc)
			report(b, func() { Gemm(g, x, y, c) })
		})
		x, y, c := gemmHalfBits(r, la, true), gemmHalfBits(r, lb, true), make([]float32, lc)
		b.Run(fmt.Sprintf("in=bf16/n=%d", n), func(b *testing.B) {
			report(b, func() { GemmHalf(g, x, y, true, true, c) })
		})
		b.Run(fmt.Sprintf("in=bf16widen/n=%d", n), func(b *testing.B) {
			a, bb := operand[float32]{h: x, bf16: true}, operand[float32]{h: y, bf16: true}
			report(b, func() { gemm(&sgemm, &sgemmJobs, g, a, bb, c) })
		})
	}
}

// BenchmarkGEMMKernelBF16 measures the 12×32 micro-kernels alone on one
// core at depth 384, eight A panels against one B panel: the float32
// AVX-512 kernel and the bfloat16 pair kernel (the same FLOPs, half the
// panel bytes, half the instructions).
func BenchmarkGEMMKernelBF16(b *testing.B) {
	const k, tiles = 384, 8
	kerns := map[string]func(int, []float32, []float32, []float32, int, float32, int){}
	if asm, _ := sgemmAsmKernels(); len(asm) > 0 && asm[0].mr == 12 {
		kerns["kernel="+asm[0].name] = asm[0].full
	}
	if sbgemm != nil {
		kerns["kernel="+sbgemm.name] = sbgemm.full
	}
	r := rand.New(rand.NewPCG(1, 2))
	a, bb := bf16Panel(r, 12*k*tiles, 0), bf16Panel(r, 32*k, 0)
	c := make([]float32, 12*32*tiles)
	for name, kn := range kerns {
		b.Run(name, func(b *testing.B) {
			for b.Loop() {
				for i := range tiles {
					kn(k, a[i*12*k:], bb, c[i*12*32:], 32, 0, 1)
				}
			}
			b.ReportMetric(2*12*32*k*tiles*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
		})
	}
}
