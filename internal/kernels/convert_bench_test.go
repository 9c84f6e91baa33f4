package kernels

import (
	"math/rand/v2"
	"strconv"
	"testing"

	"github.com/headroom-ml/headroom/dtype"
)

// The conversion benchmarks report bytes of float32 data (4 per element)
// per iteration, as dtype's benchmarks do, so the GB/s figures compare
// directly. Each runs this package's function ("kernels") and dtype's
// pure-Go loop ("dtype") at 1M elements (in cache) and 16M (beyond it).

func convBenchData(n int) []float32 {
	r := rand.New(rand.NewPCG(10, 5))
	scales := []float64{1e-3, 1e-1, 1, 10, 1e3}
	xs := make([]float32, n)
	for i := range xs {
		xs[i] = float32(r.NormFloat64() * scales[r.IntN(len(scales))])
	}
	return xs
}

var convBenchSizes = []int{1 << 20, 1 << 24}

func benchNarrow(b *testing.B, kern, pure func([]uint16, []float32)) {
	for _, n := range convBenchSizes {
		src := convBenchData(n)
		dst := make([]uint16, n)
		for _, c := range []struct {
			name string
			f    func([]uint16, []float32)
		}{{"kernels", kern}, {"dtype", pure}} {
			b.Run(c.name+"/n="+strconv.Itoa(n), func(b *testing.B) {
				b.SetBytes(4 * int64(n))
				for b.Loop() {
					c.f(dst, src)
				}
			})
		}
	}
}

func benchWiden(b *testing.B, narrow func([]uint16, []float32), kern, pure func([]float32, []uint16)) {
	for _, n := range convBenchSizes {
		src := make([]uint16, n)
		narrow(src, convBenchData(n))
		dst := make([]float32, n)
		for _, c := range []struct {
			name string
			f    func([]float32, []uint16)
		}{{"kernels", kern}, {"dtype", pure}} {
			b.Run(c.name+"/n="+strconv.Itoa(n), func(b *testing.B) {
				b.SetBytes(4 * int64(n))
				for b.Loop() {
					c.f(dst, src)
				}
			})
		}
	}
}

func BenchmarkConvF32ToF16(b *testing.B)  { benchNarrow(b, F32ToF16, dtype.F32ToF16) }
func BenchmarkConvF32ToBF16(b *testing.B) { benchNarrow(b, F32ToBF16, dtype.F32ToBF16) }
func BenchmarkConvF16ToF32(b *testing.B) {
	benchWiden(b, dtype.F32ToF16, F16ToF32, dtype.F16ToF32s)
}
func BenchmarkConvBF16ToF32(b *testing.B) {
	benchWiden(b, dtype.F32ToBF16, BF16ToF32, dtype.BF16ToF32s)
}
