package kernels

import (
	"math/rand/v2"
	"testing"
)

// BenchmarkQuant measures the streaming loops of quantized inference on
// 1M elements (in cache on this machine: 4 MiB of float32): the per-tensor
// scale (QuantScales, max |x|), Quantize and the convolution epilogue
// with bias and ReLU (dequantBiasRow). Bytes are those read plus written.
func BenchmarkQuant(b *testing.B) {
	const n = 1 << 20
	r := rand.New(rand.NewPCG(1, 1))
	x := make([]float32, n)
	acc := make([]int32, n)
	for i := range x {
		x[i] = float32(r.NormFloat64())
		acc[i] = int32(r.IntN(1<<16) - 1<<15)
	}
	q := make([]int8, n)
	out := make([]float32, n)
	s := make([]float32, 1)
	b.Run("scale", func(b *testing.B) {
		b.SetBytes(4 * n)
		for b.Loop() {
			QuantScales(s, x, 1)
		}
	})
	b.Run("quantize", func(b *testing.B) {
		b.SetBytes(5 * n)
		for b.Loop() {
			Quantize(q, x, s, 1)
		}
	})
	b.Run("dequant-relu", func(b *testing.B) {
		b.SetBytes(8 * n)
		for b.Loop() {
			ParallelFor(n/4096, 16, func(lo, hi int) {
				for i := lo; i < hi; i++ {
					dequantBiasRow(out[i*4096:(i+1)*4096], acc[i*4096:(i+1)*4096], 0.001, 0.1, true)
				}
			})
		}
	})
}
