package kernels

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/headroom-ml/headroom/dtype"
)

// BenchmarkAttentionBF16 measures the bfloat16 attention on the heads of
// `headroom bench --models gpt6x256` ((B, H, T, D) = (16, 4, 256, 64),
// causal) and of GPT-2 small at T = 256 ((8, 12, 256, 64), causal), in
// one run: "widened" widens each head to float32 and runs Attention's
// float32 tiles (the path of CPUs without AVX512_BF16), "direct" reads
// bfloat16 through the float32 kernel's widening packers (attnBF16 on
// sgemm), "pairs" the VDPBF16PS pair kernel (AVX512_BF16 only), "amx"
// the pair kernel with the products of depth 32 or more on TDPBF16PS
// (AMX-BF16 only: AttentionHalf's path there). GFLOP/s
// as in BenchmarkAttention: forward 2·B·H·T²·D when causal, backward 2.5×
// that. f32 is float32 Attention on the same values as float32 operands.
func BenchmarkAttentionBF16(b *testing.B) {
	for _, sh := range [][4]int{{16, 4, 256, 64}, {8, 12, 256, 64}} {
		bb, h, t, d := sh[0], sh[1], sh[2], sh[3]
		n := bb * h * t * d
		rng := rand.New(rand.NewPCG(7, 8))
		mk := func() []uint16 {
			s := make([]uint16, n)
			for i := range s {
				s[i] = dtype.BF16FromF32(float32(rng.NormFloat64()))
			}
			return s
		}
		q, k, v, dout := mk(), mk(), mk(), mk()
		out, dq, dk, dv := make([]uint16, n), make([]uint16, n), make([]uint16, n), make([]uint16, n)
		lse := make([]float32, bb*h*t)
		scale := 1 / math.Sqrt(float64(d))
		fwd := 2 * float64(bb*h*t*t*d)
		paths := map[string]attnBF16{"direct": {kn: &sgemm, scale: float32(scale)}}
		if sbgemm != nil {
			paths["pairs"] = attnBF16{kn: sbgemm, scale: float32(scale)}
		}
		if sbgemm != nil && amxgemm != nil {
			paths["amx"] = attnBF16{kn: sbgemm, deep: amxgemm, scale: float32(scale)}
		}
		for _, impl := range []string{"f32", "widened", "direct", "pairs", "amx"} {
			a, ok := paths[impl]
			if !ok && impl != "widened" && impl != "f32" {
				continue
			}
			forward := func() { a.forward(out, lse, q, k, v, bb, h, t, d, true) }
			backward := func() { a.grad(dq, dk, dv, dout, q, k, v, out, lse, bb, h, t, d, true) }
			if impl == "widened" {
				forward = func() { attnWidenedForward(out, lse, q, k, v, true, bb, h, t, d, scale, true) }
				backward = func() { attnWidenedGrad(dq, dk, dv, dout, q, k, v, out, lse, true, bb, h, t, d, scale, true) }
			}
			if impl == "f32" { // float32 Attention on float32 operands: the F32 step's kernel
				f := attnF32Operands(q, k, v, dout)
				forward = func() { Attention(f[4], lse, f[0], f[1], f[2], bb, h, t, d, scale, true) }
				backward = func() { AttentionGrad(f[5], f[6], f[7], f[3], f[0], f[1], f[2], f[4], lse, bb, h, t, d, scale, true) }
			}
			for _, pass := range []struct {
				name  string
				flops float64
				f     func()
			}{{"fwd", fwd, forward}, {"bwd", 2.5 * fwd, backward}} {
				b.Run(fmt.Sprintf("%dx%dx%dx%d/%s/%s", bb, h, t, d, pass.name, impl), func(b *testing.B) {
					forward() // what backward reads
					for b.Loop() {
						pass.f()
					}
					b.ReportMetric(pass.flops*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
				})
			}
		}
	}
}

// attnF32Operands returns q, k, v and dout widened to float32 and four
// float32 slices of their length (out, dq, dk, dv).
func attnF32Operands(q, k, v, dout []uint16) [8][]float32 {
	var f [8][]float32
	for i, x := range [][]uint16{q, k, v, dout} {
		f[i] = make([]float32, len(x))
		dtype.BF16ToF32s(f[i], x)
	}
	for i := 4; i < 8; i++ {
		f[i] = make([]float32, len(q))
	}
	return f
}
