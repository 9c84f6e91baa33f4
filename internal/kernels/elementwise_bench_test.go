package kernels

import (
	"math/rand/v2"
	"testing"
)

// BenchmarkUnary measures float32 Unary and UnaryGrad of the ops with a
// fast path on 1M contiguous elements (4 MiB per array, in L3): "fast" is
// the kernel as dispatched (AVX2 where the CPU has it, split across the
// workers), "go" the same with the assembly off (the noasm build's pure-Go
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
		for _, impl := range []string{"fast", "go", "math"} {
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

// unaryBenchImpl turns the assembly off for "go" and returns the undo.
func unaryBenchImpl(impl string) func() {
	saved := CPU
	if impl == "go" {
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
