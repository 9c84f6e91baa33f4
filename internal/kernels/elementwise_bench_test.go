package kernels

import (
	"math/rand/v2"
	"testing"
	"time"
)

// BenchmarkUnary measures float32 Unary and UnaryGrad of the ops with a
// fast path on 1M contiguous elements (4 MiB per array, in L3): "fast" is
// the kernel as dispatched (AVX2 where the CPU has it, split across the
// workers), "avx2" the same with AVX-512 off (the AVX2 loops), "go" the
// same with the assembly off (the noasm build's pure-Go
// twins, still split), "math" the loop that was there before (the float64
// math function per element through UnaryFunc/UnaryDeriv, one goroutine).
// GB/s count bytes read plus written (8 per element forward, 12 for the
// gradients, which read dy and x or y).
func BenchmarkUnary(b *testing.B) {
	const n = 1 << 20
	r := rand.New(rand.NewPCG(3, 4))
	x, y, dy, z := make([]float32, n), make([]float32, n), make([]float32, n), make([]float32, n)
	for i := range x {
		x[i] = float32(3 * r.NormFloat64())
		dy[i] = float32(r.NormFloat64())
	}
	l := Layout{Shape: []int{n}}
	for _, c := range []struct {
		name string
		op   int
	}{{"exp", UExp}, {"tanh", UTanh}, {"sigmoid", USigmoid}, {"gelu_tanh", UGeluTanh}, {"gelu_erf", UGeluErf}} {
		Unary(c.op, 0, y, l, x, l) // the output the gradients read
		for _, impl := range []string{"fast", "avx2", "go", "math"} {
			if c.op == UGeluErf && impl != "fast" {
				continue // no fast path: "fast" is the math loop split across the workers
			}
			b.Run(c.name+"/"+impl, func(b *testing.B) {
				defer unaryBenchImpl(impl)()
				b.SetBytes(8 * n)
				for b.Loop() {
					if impl == "math" {
						unaryMathLoop(c.op, z, x)
					} else {
						Unary(c.op, 0, z, l, x, l)
					}
				}
			})
			b.Run(c.name+"_grad/"+impl, func(b *testing.B) {
				defer unaryBenchImpl(impl)()
				b.SetBytes(12 * n)
				for b.Loop() {
					if impl == "math" {
						unaryDerivMathLoop(c.op, z, dy, x, y)
					} else {
						UnaryGrad(c.op, 0, z, dy, x, y)
					}
				}
			})
		}
	}
}

// unaryBenchImpl turns AVX-512 off for "avx2" and the assembly off for
// "go", and returns the undo.
func unaryBenchImpl(impl string) func() {
	saved := CPU
	switch impl {
	case "avx2":
		CPU = Features{AVX2FMA: saved.AVX2FMA, F16C: saved.F16C}
	case "go":
		CPU = Features{}
	}
	return func() { CPU = saved }
}

// unaryMathLoop and unaryDerivMathLoop are Unary's and UnaryGrad's loops
// before the fast paths.
func unaryMathLoop(op int, dst, src []float32) {
	f := UnaryFunc(op, 0)
	for i, v := range src {
		dst[i] = float32(f(float64(v)))
	}
}

func unaryDerivMathLoop(op int, dx, dy, x, y []float32) {
	f := UnaryDeriv(op, 0)
	for i := range dx {
		dx[i] = float32(float64(dy[i]) * f(float64(x[i]), float64(y[i])))
	}
}

// BenchmarkFastMathLoops measures the fast loops themselves on one
// goroutine over 16 Ki elements (64 KiB per array, in L2), AVX2 against
// AVX-512 (the CPU must have the path), to compare their cost per element
// without the workers' and memory's noise.
func BenchmarkFastMathLoops(b *testing.B) {
	const n = 1 << 14
	r := rand.New(rand.NewPCG(5, 6))
	x, dy, d := make([]float32, n), make([]float32, n), make([]float32, n)
	for i := range x {
		x[i] = float32(3 * r.NormFloat64())
		dy[i] = float32(r.NormFloat64())
	}
	paths := map[string]Features{"avx2": {AVX2FMA: CPU.AVX2FMA}, "avx512": CPU}
	for _, c := range []struct {
		name string
		run  func(f Features)
	}{
		{"exp", func(f Features) { expShiftOn(f, d, x, 0.5) }},
		{"tanh", func(f Features) { fastUnaryOn(f, UTanh, d, x) }},
		{"sigmoid", func(f Features) { fastUnaryOn(f, USigmoid, d, x) }},
		{"gelu_tanh", func(f Features) { fastUnaryOn(f, UGeluTanh, d, x) }},
		{"gelu_tanh_grad", func(f Features) { geluTanhGradOn(f, d, dy, x) }},
	} {
		for _, p := range []string{"avx2", "avx512"} {
			f := paths[p]
			b.Run(c.name+"/"+p, func(b *testing.B) {
				if (p == "avx512" && !f.AVX512) || !f.AVX2FMA {
					b.Skip("the CPU lacks this path")
				}
				b.SetBytes(8 * n)
				for b.Loop() {
					c.run(f)
				}
			})
		}
	}
}

// BenchmarkCopyHeads times the permutation of a GPT's attention heads,
// (B, T, 3, H, D) → (3, B, H, T, D) in 16 bits at B 16, T 256, H 4, D 64
// (bench's gpt6x256), by the walk on one goroutine and by Copy (split
// across the workers), alternately, best of each.
func BenchmarkCopyHeads(b *testing.B) {
	const bb, tt, h, d = 16, 256, 4, 64
	src, dst := make([]uint16, 3*bb*tt*h*d), make([]uint16, 3*bb*tt*h*d)
	dl := Layout{Shape: []int{3, bb, h, tt, d}}
	sl := Layout{Shape: []int{3, bb, h, tt, d}, Strides: []int{h * d, tt * 3 * h * d, d, 3 * h * d, 1}}
	best := [2]time.Duration{1 << 62, 1 << 62}
	for b.Loop() {
		for i, f := range []func([]uint16, Layout, []uint16, Layout){copyWalk[uint16], Copy[uint16]} {
			t0 := time.Now()
			f(dst, dl, src, sl)
			best[i] = min(best[i], time.Since(t0))
		}
	}
	b.ReportMetric(float64(best[0].Microseconds()), "walk-us")
	b.ReportMetric(float64(best[1].Microseconds()), "copy-us")
	b.ReportMetric(float64(best[0])/float64(best[1]), "speedup")
}
