package kernels

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/headroom-ml/headroom/internal/cputime"
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

// resnet18ConvShapes are the products of ResNet-18's 3×3 convolutions
// (CIFAR, batch 32) that the 16-bit GEMM benchmarks measure.
var resnet18ConvShapes = []gemmBench{
	{name: "fwd/64x256x576", m: 64, n: 256, k: 576},
	{name: "fwd/128x256x1152", m: 128, n: 256, k: 1152},
	{name: "fwd/256x64x2304", m: 256, n: 64, k: 2304},
	{name: "fwd/64x2048x576", m: 64, n: 2048, k: 576},
	{name: "fwd/256x2048x2304", m: 256, n: 2048, k: 2304},
	{name: "dgrad/576x256x64", ta: true, m: 576, n: 256, k: 64},
	{name: "dgrad/1152x256x128", ta: true, m: 1152, n: 256, k: 128},
	{name: "wgrad/64x576x1024", tb: true, m: 64, n: 576, k: 1024},
	{name: "wgrad/128x1152x256", tb: true, m: 128, n: 1152, k: 256},
	{name: "wgrad/512x4608x16", tb: true, m: 512, n: 4608, k: 16},
}

// BenchmarkGEMMBF16Conv measures GFLOP/s on all workers at the products
// of ResNet-18's 3×3 convolutions (CIFAR, batch 32): the forward pass
// (filters × im2col band: M = K filters, N = a band of output columns,
// K = 9·C), the input gradient (filtersᵀ × dy band: M = 9·C, K = K) and
// the weight gradient (dy × colᵀ: M = K, N = 9·C, K = a band). Each shape
// runs as float32 (Gemm), as bfloat16 on the pair kernel (GemmHalf), and
// as bfloat16 with the pair packers' Go twins (pack=go): compare with
// `benchstat -col /in`.
func BenchmarkGEMMBF16Conv(b *testing.B) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, s := range resnet18ConvShapes {
		g, la, lb, lc := s.args()
		g.Batch, g.StrideA, g.StrideB, g.StrideC = 1, 0, 0, 0
		run := func(in string, f func()) {
			b.Run(fmt.Sprintf("shape=%s/in=%s", s.name, in), func(b *testing.B) { benchFlops(b, s.flops(), f) })
		}
		x, y, c := benchF32(r, la), benchF32(r, lb), make([]float32, lc)
		hx, hy := gemmHalfBits(r, la, true), gemmHalfBits(r, lb, true)
		run("f32", func() { Gemm(g, x, y, c) })
		run("bf16", func() { GemmHalf(g, hx, hy, true, true, c) })
		run("bf16-gopack", func() { withGoPacking(func() { GemmHalf(g, hx, hy, true, true, c) }) })
	}
}

// BenchmarkGEMMBF16Blocking runs conv-shaped bfloat16 products through
// the blocked driver on the pair kernel with other block sizes (kc depth
// values, mc rows), for tuning: compare with `benchstat -col /kc`.
func BenchmarkGEMMBF16Blocking(b *testing.B) {
	if sbgemm == nil {
		b.Skip("no bfloat16 pair kernel on this CPU")
	}
	shapes := []gemmBench{
		{name: "fwd/128x256x1152", m: 128, n: 256, k: 1152},
		{name: "fwd/64x2048x576", m: 64, n: 2048, k: 576},
		{name: "fwd/256x2048x2304", m: 256, n: 2048, k: 2304},
		{name: "wgrad/64x576x1024", tb: true, m: 64, n: 576, k: 1024},
	}
	r := rand.New(rand.NewPCG(1, 2))
	for _, s := range shapes {
		g, la, lb, lc := s.args()
		x, y := operand[float32]{h: gemmHalfBits(r, la, true), bf16: true}, operand[float32]{h: gemmHalfBits(r, lb, true), bf16: true}
		c := make([]float32, lc)
		for _, bl := range [][2]int{{384, 240}, {576, 240}, {768, 240}, {768, 120}, {1152, 120}} {
			kn := *sbgemm
			kn.kc, kn.mc = bl[0], bl[1]
			var jobs freeList[gemmJob[float32]]
			b.Run(fmt.Sprintf("shape=%s/kc=%d/mc=%d", s.name, bl[0], bl[1]), func(b *testing.B) {
				benchFlops(b, s.flops(), func() { gemmBlocked(&kn, &jobs, g, x, y, c) })
			})
		}
	}
}

// benchFlops runs f (flops floating-point operations) as the benchmark
// loop and reports GFLOP/s over wall time, over the fastest single call
// (bestGFLOP/s) and over this process's processor time (GFLOP/cpu-s):
// on a shared machine the last two count less of the time other
// processes hold the cores.
func benchFlops(b *testing.B, flops float64, f func()) {
	f()
	best := time.Duration(1 << 62)
	cpu0 := cputime.Process()
	for b.Loop() {
		t0 := time.Now()
		f()
		best = min(best, time.Since(t0))
	}
	b.ReportMetric(flops*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
	b.ReportMetric(flops/best.Seconds()/1e9, "bestGFLOP/s")
	if cpu := cputime.Process() - cpu0; cpu > 0 {
		b.ReportMetric(flops*float64(b.N)/cpu.Seconds()/1e9, "GFLOP/cpu-s")
	}
}
