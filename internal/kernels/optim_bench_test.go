package kernels

import (
	"strconv"
	"testing"
)

// BenchmarkAdamUpdate measures AdamUpdate on float32 parameters with each
// path of this machine, split across the worker pool. Bytes are those it
// moves: p, g, m, v read and p, m, v written, 28 per element. n = 11M is
// ResNet-18's parameter count (far beyond L3); n = 256K stays in cache.
func BenchmarkAdamUpdate(b *testing.B) {
	saved := CPU
	defer func() { CPU = saved }()
	for _, n := range []int{1 << 18, 11_200_000} {
		x, y, z, m, v := vecBenchData(n)
		copy(z, x)
		for i := range v {
			v[i] = y[i] * y[i]
		}
		a := AdamUpdateArgs{LR: 1e-3, Beta1: 0.9, Beta2: 0.999, Eps: 1e-8, WeightDecay: 0.01, Step: 10}
		for _, path := range optimPaths() {
			b.Run(path.name+"/n="+strconv.Itoa(n), func(b *testing.B) {
				CPU = path.f
				defer func() { CPU = saved }()
				b.SetBytes(28 * int64(n))
				for b.Loop() {
					AdamUpdate(z, x, m, v, a)
				}
			})
		}
	}
}
