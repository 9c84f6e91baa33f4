package kernels

import (
	"math/rand/v2"
	"strconv"
	"testing"
	"time"
)

// BenchmarkGemmI8 measures GemmI8Packed (B packed once, as for weights),
// GemmI8 (B packed on every call) and, in the same run, the float32 Gemm
// at the same sizes; the custom metric GOP/s counts 2·M·N·K operations
// (a multiply and an add per term) for all of them, so the ratio of the
// int8 and f32 lines is the speed-up.
func BenchmarkGemmI8(b *testing.B) {
	r := rand.New(rand.NewPCG(1, 1))
	for _, s := range []int{256, 1024} {
		m, n, k := s, s, s
		a := randI8(r, m*k, false)
		bb := randI8(r, k*n, false)
		c := make([]int32, m*n)
		ops := 2 * float64(m) * float64(n) * float64(k)
		report := func(b *testing.B) {
			b.ReportMetric(ops*float64(b.N)/b.Elapsed().Seconds()/1e9, "GOP/s")
		}
		b.Run("i8packed/"+strconv.Itoa(s), func(b *testing.B) {
			p := PackI8(k, n, bb, n, false)
			for b.Loop() {
				GemmI8Packed(m, a, k, p, c, n)
			}
			report(b)
		})
		b.Run("i8/"+strconv.Itoa(s), func(b *testing.B) {
			for b.Loop() {
				GemmI8(m, n, k, a, k, bb, n, c, n)
			}
			report(b)
		})
		b.Run("f32/"+strconv.Itoa(s), func(b *testing.B) {
			fa, fb, fc := make([]float32, m*k), make([]float32, k*n), make([]float32, m*n)
			for i := range fa {
				fa[i] = float32(a[i])
			}
			for i := range fb {
				fb[i] = float32(bb[i])
			}
			g := GemmArgs{M: m, N: n, K: k, Alpha: 1, LdA: k, LdB: n, LdC: n, Batch: 1}
			for b.Loop() {
				Gemm(g, fa, fb, fc)
			}
			report(b)
		})
	}
}

// BenchmarkDequantI32 measures the epilogue on a 1024×1024 accumulator
// with per-row and per-column scales and a bias; bytes are the int32 read
// plus the float32 written.
func BenchmarkDequantI32(b *testing.B) {
	const m, n = 1024, 1024
	acc := make([]int32, m*n)
	dst := make([]float32, m*n)
	sa, sb, bias := make([]float32, m), make([]float32, n), make([]float32, n)
	for i := range sa {
		sa[i] = 0.01
	}
	for j := range sb {
		sb[j], bias[j] = 0.02, 1
	}
	b.SetBytes(8 * m * n)
	for b.Loop() {
		DequantI32(m, n, dst, n, acc, n, sa, sb, bias)
	}
}

// BenchmarkGemmI8VsF32 alternates GemmI8Packed and the float32 Gemm on
// the same 1024³ problem and reports the best rate of each over all
// iterations and their ratio ("xf32"). Alternating and taking the best
// keeps the ratio meaningful when other work shares the machine.
func BenchmarkGemmI8VsF32(b *testing.B) {
	const s = 1024
	r := rand.New(rand.NewPCG(1, 1))
	a := randI8(r, s*s, false)
	bb := randI8(r, s*s, false)
	c := make([]int32, s*s)
	p := PackI8(s, s, bb, s, false)
	fa, fb, fc := make([]float32, s*s), make([]float32, s*s), make([]float32, s*s)
	for i := range fa {
		fa[i], fb[i] = float32(a[i]), float32(bb[i])
	}
	g := GemmArgs{M: s, N: s, K: s, Alpha: 1, LdA: s, LdB: s, LdC: s, Batch: 1}
	bestI, bestF := time.Duration(1<<62), time.Duration(1<<62)
	for b.Loop() {
		t0 := time.Now()
		GemmI8Packed(s, a, s, p, c, s)
		t1 := time.Now()
		Gemm(g, fa, fb, fc)
		t2 := time.Now()
		bestI, bestF = min(bestI, t1.Sub(t0)), min(bestF, t2.Sub(t1))
	}
	ops := 2.0 * s * s * s
	b.ReportMetric(ops/bestI.Seconds()/1e9, "i8GOP/s")
	b.ReportMetric(ops/bestF.Seconds()/1e9, "f32GFLOP/s")
	b.ReportMetric(bestF.Seconds()/bestI.Seconds(), "xf32")
}
