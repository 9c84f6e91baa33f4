package kernels

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// BenchmarkAttention measures the float32 attention kernels on the
// transformer example's shape, (B, H, T, D) = (32, 4, 64, 32), and on
// GPT-2 small's head shape at T = 256, (8, 12, 256, 64), causal and not:
// forward, backward, and both. GFLOP/s count the FlashAttention
// convention: forward 4·B·H·T²·D (two products of 2·T²·D each per head),
// backward 2.5× that (five products), both 3.5×; half of each when causal.
// "tiled" is the kernel in attention.go; "scalar" the one it replaced
// (attention_ref_test.go), in the same run.
func BenchmarkAttention(b *testing.B) {
	for _, sh := range [][4]int{{32, 4, 64, 32}, {8, 12, 256, 64}} {
		bb, h, t, d := sh[0], sh[1], sh[2], sh[3]
		n := bb * h * t * d
		rng := rand.New(rand.NewPCG(7, 8))
		mk := func() []float32 {
			s := make([]float32, n)
			for i := range s {
				s[i] = float32(rng.NormFloat64())
			}
			return s
		}
		q, k, v, dout := mk(), mk(), mk(), mk()
		out, dq, dk, dv := make([]float32, n), make([]float32, n), make([]float32, n), make([]float32, n)
		lse := make([]float32, bb*h*t)
		scale := 1 / math.Sqrt(float64(d))
		for _, causal := range []bool{false, true} {
			fwd := 4 * float64(bb*h*t*t*d)
			if causal {
				fwd /= 2
			}
			for _, impl := range []string{"tiled", "scalar"} {
				forward, backward := Attention[float32], AttentionGrad[float32]
				if impl == "scalar" {
					forward, backward = attnScalarForward[float32], attnScalarBackward[float32]
				}
				for _, pass := range []struct {
					name  string
					flops float64
					f     func()
				}{
					{"fwd", fwd, func() { forward(out, lse, q, k, v, bb, h, t, d, scale, causal) }},
					{"bwd", 2.5 * fwd, func() { backward(dq, dk, dv, dout, q, k, v, out, lse, bb, h, t, d, scale, causal) }},
					{"fwd+bwd", 3.5 * fwd, func() {
						forward(out, lse, q, k, v, bb, h, t, d, scale, causal)
						backward(dq, dk, dv, dout, q, k, v, out, lse, bb, h, t, d, scale, causal)
					}},
				} {
					name := fmt.Sprintf("%dx%dx%dx%d/causal=%v/%s/%s", bb, h, t, d, causal, pass.name, impl)
					b.Run(name, func(b *testing.B) {
						forward(out, lse, q, k, v, bb, h, t, d, scale, causal) // what backward reads
						for b.Loop() {
							pass.f()
						}
						b.ReportMetric(pass.flops*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
					})
				}
			}
		}
	}
}
