package dtype

import (
	"math/rand/v2"
	"testing"
)

const benchN = 1 << 20

// The benchmarks report throughput in bytes of float32 data (4 per
// element) converted per iteration. The data looks like activations:
// normally distributed with a spread of scales, so the branches taken are
// the common ones rather than a random mix of Inf, NaN and subnormals.

// benchData returns n seeded normal float32 values with scales 1e-3..1e3.
func benchData(seed uint64, n int) []float32 {
	r := rand.New(rand.NewPCG(seed, 5))
	scales := []float64{1e-3, 1e-1, 1, 10, 1e3}
	xs := make([]float32, n)
	for i := range xs {
		xs[i] = float32(r.NormFloat64() * scales[r.IntN(len(scales))])
	}
	return xs
}

// BenchmarkF32ToF16 measures bulk float32 to binary16 rounding.
func BenchmarkF32ToF16(b *testing.B) {
	src := benchData(10, benchN)
	dst := make([]uint16, benchN)
	b.SetBytes(4 * benchN)
	for b.Loop() {
		F32ToF16(dst, src)
	}
}

// BenchmarkF16ToF32s measures bulk binary16 to float32 widening.
func BenchmarkF16ToF32s(b *testing.B) {
	src := make([]uint16, benchN)
	F32ToF16(src, benchData(11, benchN))
	dst := make([]float32, benchN)
	b.SetBytes(4 * benchN)
	for b.Loop() {
		F16ToF32s(dst, src)
	}
}

// BenchmarkF32ToBF16 measures bulk float32 to bfloat16 rounding.
func BenchmarkF32ToBF16(b *testing.B) {
	src := benchData(12, benchN)
	dst := make([]uint16, benchN)
	b.SetBytes(4 * benchN)
	for b.Loop() {
		F32ToBF16(dst, src)
	}
}

// BenchmarkBF16ToF32s measures bulk bfloat16 to float32 widening.
func BenchmarkBF16ToF32s(b *testing.B) {
	src := make([]uint16, benchN)
	F32ToBF16(src, benchData(13, benchN))
	dst := make([]float32, benchN)
	b.SetBytes(4 * benchN)
	for b.Loop() {
		BF16ToF32s(dst, src)
	}
}
