package kernels

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// amxBenchShapes are a square product and resnet18ConvShapes.
var amxBenchShapes = append([]gemmBench{{name: "square/1024", m: 1024, n: 1024, k: 1024}}, resnet18ConvShapes...)

// BenchmarkGEMMAMX measures GFLOP/s on all workers of each shape as
// float32 (Gemm), as bfloat16 on the VDPBF16PS pair kernel and as
// bfloat16 on the AMX kernel, one after the other per shape: compare with
// `benchstat -col /in` over -count runs.
func BenchmarkGEMMAMX(b *testing.B) {
	if amxgemm == nil || sbgemm == nil {
		b.Skip("no AMX kernel on this CPU")
	}
	r := rand.New(rand.NewPCG(1, 2))
	for _, s := range amxBenchShapes {
		g, la, lb, lc := s.args()
		g.Batch, g.StrideA, g.StrideB, g.StrideC = 1, 0, 0, 0
		x, y, c := benchF32(r, la), benchF32(r, lb), make([]float32, lc)
		hx := operand[float32]{h: gemmHalfBits(r, la, true), bf16: true}
		hy := operand[float32]{h: gemmHalfBits(r, lb, true), bf16: true}
		run := func(in string, f func()) {
			b.Run(fmt.Sprintf("shape=%s/in=%s", s.name, in), func(b *testing.B) { benchFlops(b, s.flops(), f) })
		}
		run("f32", func() { Gemm(g, x, y, c) })
		run("bf16-vdpbf16ps", func() { gemmBias(sbgemm, &sgemmJobs, g, hx, hy, nil, c) })
		if s.k >= amxMinK { // shallower products never run on it
			run("bf16-amx", func() { gemmBias(amxgemm, &sgemmJobs, g, hx, hy, nil, c) })
		}
	}
}

// BenchmarkGEMMKernelAMX measures the micro-kernels alone on one core at
// depth 384, A panels for 256 rows against one B panel of 32 columns:
// the AMX 32×32 kernel and the VDPBF16PS 12×32 pair kernel (the same
// FLOPs up to the pair kernel's 264 rows).
func BenchmarkGEMMKernelAMX(b *testing.B) {
	if amxgemm == nil || sbgemm == nil {
		b.Skip("no AMX kernel on this CPU")
	}
	const k = 384
	r := rand.New(rand.NewPCG(1, 2))
	bb := bf16Panel(r, 32*k, 0)
	for _, kn := range []*gemmKernel[float32]{amxgemm, sbgemm} {
		tiles := ceilDiv(256, kn.mr)
		a := bf16Panel(r, kn.mr*k*tiles, 0)
		c := make([]float32, kn.mr*32*tiles)
		b.Run("kernel="+kn.name, func(b *testing.B) {
			for b.Loop() {
				for i := range tiles {
					kn.full(k, a[i*kn.mr*k:], bb, c[i*kn.mr*32:], 32, 0, 1)
				}
			}
			b.ReportMetric(2*float64(kn.mr*tiles)*32*k*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
		})
	}
}

// BenchmarkGEMMAMXBlocking runs conv-shaped products on the AMX kernel
// with other block sizes (kc depth values, mc rows), for tuning: compare
// with `benchstat -col /kc`.
func BenchmarkGEMMAMXBlocking(b *testing.B) {
	if amxgemm == nil {
		b.Skip("no AMX kernel on this CPU")
	}
	r := rand.New(rand.NewPCG(1, 2))
	for _, s := range []gemmBench{amxBenchShapes[0], amxBenchShapes[2], amxBenchShapes[4], amxBenchShapes[5], amxBenchShapes[9]} {
		g, la, lb, lc := s.args()
		x, y := operand[float32]{h: gemmHalfBits(r, la, true), bf16: true}, operand[float32]{h: gemmHalfBits(r, lb, true), bf16: true}
		c := make([]float32, lc)
		for _, bl := range [][2]int{{384, 256}, {512, 256}, {768, 128}, {768, 256}, {1024, 128}} {
			kn := *amxgemm
			kn.kc, kn.mc = bl[0], bl[1]
			var jobs freeList[gemmJob[float32]]
			b.Run(fmt.Sprintf("shape=%s/kc=%d/mc=%d", s.name, bl[0], bl[1]), func(b *testing.B) {
				benchFlops(b, s.flops(), func() { gemmBlocked(&kn, &jobs, g, x, y, c) })
			})
		}
	}
}

// BenchmarkPackAAMX packs a 256×384 block of op(A) into AMX panels from
// A (rows contiguous in depth: a weight gradient's dy) and from Aᵀ (a
// transposed filter matrix), in ns per value.
func BenchmarkPackAAMX(b *testing.B) {
	const mc, kc, ld = 256, 384, 1024
	r := rand.New(rand.NewPCG(1, 2))
	h := gemmHalfBits(r, 1024*ld, true)
	dst := make([]float32, mc*kc)
	for _, trans := range []bool{false, true} {
		b.Run(fmt.Sprintf("trans=%v", trans), func(b *testing.B) {
			for b.Loop() {
				packAAMX(dst, h, 0, ld, trans, 0, mc, 0, kc)
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/(mc*kc), "ns/value")
		})
	}
}

// gptGemmShapes are the bfloat16 products of one layer of the 6×256 GPT
// step (16×256 tokens): the forward projections (K = 256, 1024), the
// input gradients (B transposed) and a weight gradient (A transposed).
var gptGemmShapes = []gemmBench{
	{name: "qkv", m: 4096, n: 768, k: 256},
	{name: "fc1", m: 4096, n: 1024, k: 256},
	{name: "fc2", m: 4096, n: 256, k: 1024},
	{name: "dfc1", tb: true, m: 4096, n: 256, k: 1024},
	{name: "dqkv", tb: true, m: 4096, n: 256, k: 768},
	{name: "wfc1", ta: true, m: 256, n: 1024, k: 4096},
}

// BenchmarkGEMMAMXInPlace measures the GPT step's products on the AMX
// kernel with op(A)'s row panels read in place and with every panel
// packed (gemmAInPlace), alternated per shape: compare with `benchstat
// -col /a` over -count runs (GFLOP/cpu-s is the load-proof figure).
func BenchmarkGEMMAMXInPlace(b *testing.B) {
	if amxgemm == nil {
		b.Skip("no AMX kernel on this CPU")
	}
	r := rand.New(rand.NewPCG(1, 2))
	defer func() { gemmAInPlace = true }()
	for _, s := range gptGemmShapes {
		g, la, lb, lc := s.args()
		g.Batch, g.StrideA, g.StrideB, g.StrideC = 1, 0, 0, 0
		hx := operand[float32]{h: gemmHalfBits(r, la, true), bf16: true}
		hy := operand[float32]{h: gemmHalfBits(r, lb, true), bf16: true}
		c := make([]float32, lc)
		for _, on := range []bool{false, true} {
			name := map[bool]string{false: "packed", true: "inplace"}[on]
			b.Run(fmt.Sprintf("shape=%s/a=%s", s.name, name), func(b *testing.B) {
				gemmAInPlace = on
				benchFlops(b, s.flops(), func() { gemmBias(amxgemm, &sgemmJobs, g, hx, hy, nil, c) })
			})
		}
	}
}

// BenchmarkGEMMBF16Out measures the GPT step's forward products with a
// bias and a bfloat16 C: computed into float32 and narrowed by a second
// pass (GemmHalfBias, then F32ToBF16 over C: out=pass) against each tile
// narrowed as it is finished (GemmHalfBF16: out=tile), alternated per
// shape: `benchstat -col /out` over -count runs.
func BenchmarkGEMMBF16Out(b *testing.B) {
	r := rand.New(rand.NewPCG(3, 4))
	for _, s := range gptGemmShapes[:3] {
		g, la, lb, lc := s.args()
		g.Batch, g.StrideA, g.StrideB, g.StrideC = 1, 0, 0, 0
		ha, hb := gemmHalfBits(r, la, true), gemmHalfBits(r, lb, true)
		bias := benchF32(r, s.n)
		c, out := make([]float32, lc), make([]uint16, lc)
		b.Run(fmt.Sprintf("shape=%s/out=pass", s.name), func(b *testing.B) {
			benchFlops(b, s.flops(), func() {
				GemmHalfBias(g, ha, hb, true, true, bias, c)
				F32ToBF16(out, c)
			})
		})
		b.Run(fmt.Sprintf("shape=%s/out=tile", s.name), func(b *testing.B) {
			benchFlops(b, s.flops(), func() { GemmHalfBF16(g, ha, hb, true, true, bias, c, out) })
		})
	}
}
