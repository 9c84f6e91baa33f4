package kernels

import (
	"strconv"
	"testing"
)

// BenchmarkAdamUpdate measures AdamUpdate on float32 parameters with each
// path of this machine, split across the worker pool. Bytes are those it
// moves: p, g, m, v read and p, m, v written, 28 per element. n = 11.2M is
// ResNet-18's parameter count (far beyond L3); n = 256K stays in cache.
func BenchmarkAdamUpdate(b *testing.B) {
	a := AdamUpdateArgs{LR: 1e-3, Beta1: 0.9, Beta2: 0.999, Eps: 1e-8, WeightDecay: 0.01, Step: 10}
	optimBench(b, 28, func(x, y, z, m, v []float32) func() {
		for i := range v {
			v[i] = y[i] * y[i]
		}
		return func() { AdamUpdate(z, x, m, v, a) }
	})
}

// BenchmarkSGDUpdate measures SGDUpdate with Nesterov momentum likewise.
// Bytes: p, g, buf read and p, buf written, 20 per element.
func BenchmarkSGDUpdate(b *testing.B) {
	a := SGDUpdateArgs{LR: 1e-3, Momentum: 0.9, WeightDecay: 1e-4, Nesterov: true}
	optimBench(b, 20, func(x, y, z, m, _ []float32) func() {
		copy(m, y)
		return func() { SGDUpdate(z, x, m, a) }
	})
}

// optimBench runs the update that setup makes from fresh data (parameters
// z, a copy of x) on each path and size, at bytes per element.
func optimBench(b *testing.B, bytes int64, setup func(x, y, z, m, v []float32) func()) {
	saved := CPU
	defer func() { CPU = saved }()
	for _, n := range []int{1 << 18, 11_200_000} {
		x, y, z, m, v := vecBenchData(n)
		copy(z, x)
		f := setup(x, y, z, m, v)
		for _, path := range optimPaths() {
			b.Run(path.name+"/n="+strconv.Itoa(n), func(b *testing.B) {
				CPU = path.f
				defer func() { CPU = saved }()
				b.SetBytes(bytes * int64(n))
				for b.Loop() {
					f()
				}
			})
		}
	}
}
