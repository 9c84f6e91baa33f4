package kernels

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/headroom-ml/headroom/dtype"
)

// TestAttentionHalf: AttentionHalf and AttentionGradHalf on bfloat16
// (where the CPU lacks AVX512_BF16) and float16 operands give bit for bit
// what Attention and AttentionGrad's algorithm gives on the operands
// widened to float32 with each P and dS tile rounded to the 16-bit type
// element by element by package dtype's scalar conversions (outputs
// narrowed after), on every
// kernel path of this machine, causal or not: one element, heads of odd
// length and width (tails of every tile), one that spans several key
// blocks, and a call large enough to run on the workers.
func TestAttentionHalf(t *testing.T) {
	saved, paths := CPU, optimPaths()
	defer func() { CPU = saved }()
	r := rand.New(rand.NewPCG(13, 17))
	for _, bf16 := range []bool{true, false} {
		if bf16 && sbgemm != nil {
			t.Log("bfloat16 takes the pair kernel on this CPU: TestAttentionBF16PairsTwin and TestAttentionBF16PairsReference check it")
			continue
		}
		for _, sh := range [][4]int{{1, 1, 1, 1}, {1, 2, 5, 3}, {2, 1, 70, 17}, {1, 1, 300, 16}, {2, 3, 130, 17}} {
			b, h, tt, d := sh[0], sh[1], sh[2], sh[3]
			n := b * h * tt * d
			var in [4][]uint16 // q, k, v, dout
			for i := range in {
				in[i] = make([]uint16, n)
				for j := range in[i] {
					in[i][j] = halfOf(bf16, float32(r.NormFloat64()))
				}
			}
			for _, causal := range []bool{false, true} {
				for _, p := range paths {
					CPU = p.f
					what := fmt.Sprintf("%s bf16=%v %v causal=%v:", p.name, bf16, sh, causal)
					attnHalfCase(t, what, bf16, in, b, h, tt, d, causal)
				}
				CPU = saved
			}
		}
	}
}

// attnHalfCase checks one shape on the current path.
func attnHalfCase(t *testing.T, what string, bf16 bool, in [4][]uint16, b, h, tt, d int, causal bool) {
	t.Helper()
	n, rows := len(in[0]), b*h*tt
	scale := 1 / math.Sqrt(float64(d))
	wide := func(x []uint16) []float32 {
		v := make([]float32, len(x))
		if bf16 {
			dtype.BF16ToF32s(v, x)
		} else {
			dtype.F16ToF32s(v, x)
		}
		return v
	}
	round := func(v []float32) []float32 { // narrowed and widened again
		hv := make([]uint16, len(v))
		for i, x := range v {
			hv[i] = halfOf(bf16, x)
		}
		return wide(hv)
	}
	rnd := func(s []float32, ld, rows, cols int) { // P and dS to 16 bits
		for r := range rows {
			copy(s[r*ld:r*ld+cols], round(s[r*ld:r*ld+cols]))
		}
	}
	q, k, v, dout := wide(in[0]), wide(in[1]), wide(in[2]), wide(in[3])
	out, lse := make([]float32, n), make([]float32, rows)
	attnRun(out, lse, q, k, v, b, h, tt, d, scale, causal, rnd)
	hout, hlse := make([]uint16, n), make([]float32, rows)
	AttentionHalf(hout, hlse, in[0], in[1], in[2], bf16, b, h, tt, d, scale, causal)
	outR := round(out)
	sameF32(t, what+" forward out", wide(hout), outR)
	sameF32(t, what+" forward lse", hlse, lse)
	// The gradient from the narrowed output, as the 16-bit forward left it.
	gq, gk, gv := make([]float32, n), make([]float32, n), make([]float32, n)
	attnGradRun(gq, gk, gv, dout, q, k, v, outR, lse, b, h, tt, d, scale, causal, rnd)
	hq, hk, hv := make([]uint16, n), make([]uint16, n), make([]uint16, n)
	AttentionGradHalf(hq, hk, hv, in[3], in[0], in[1], in[2], hout, hlse, bf16, b, h, tt, d, scale, causal)
	sameF32(t, what+" dq", wide(hq), round(gq))
	sameF32(t, what+" dk", wide(hk), round(gk))
	sameF32(t, what+" dv", wide(hv), round(gv))
}

// sameF32 fails the test at the first element whose bits differ.
func sameF32(t *testing.T, what string, got, want []float32) {
	t.Helper()
	for i := range want {
		if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
			t.Fatalf("%s [%d of %d] = %v, want %v", what, i, len(want), got[i], want[i])
		}
	}
}
