package kernels

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// attnRef computes attention and its gradients for one head with the whole
// t×t matrices, as the textbook formulas say: S = scale·QKᵀ (masked), P =
// softmax(S), O = PV; dV = Pᵀ dO, dP = dO Vᵀ, dS = P∘(dP − rowsum(dP∘P)),
// dQ = scale·dS K, dK = scale·dSᵀ Q.
func attnRef(q, k, v, do []float64, t, d int, scale float64, causal bool) (o, lse, dq, dk, dv []float64) {
	P := make([][]float64, t)
	lse = make([]float64, t)
	for i := range t {
		s := make([]float64, t)
		mx := math.Inf(-1)
		for j := range t {
			s[j] = math.Inf(-1)
			if causal && j > i {
				continue
			}
			var acc float64
			for x := range d {
				acc += q[i*d+x] * k[j*d+x]
			}
			s[j] = scale * acc
			mx = math.Max(mx, s[j])
		}
		var sum float64
		for j := range t {
			s[j] = math.Exp(s[j] - mx)
			sum += s[j]
		}
		for j := range t {
			s[j] /= sum
		}
		P[i] = s
		lse[i] = mx + math.Log(sum)
	}
	o = make([]float64, t*d)
	dq, dk, dv = make([]float64, t*d), make([]float64, t*d), make([]float64, t*d)
	for i := range t {
		for j := range t {
			for x := range d {
				o[i*d+x] += P[i][j] * v[j*d+x]
				dv[j*d+x] += P[i][j] * do[i*d+x]
			}
		}
	}
	for i := range t {
		dp := make([]float64, t)
		var rs float64
		for j := range t {
			for x := range d {
				dp[j] += do[i*d+x] * v[j*d+x]
			}
			rs += dp[j] * P[i][j]
		}
		for j := range t {
			ds := P[i][j] * (dp[j] - rs)
			for x := range d {
				dq[i*d+x] += scale * ds * k[j*d+x]
				dk[j*d+x] += scale * ds * q[i*d+x]
			}
		}
	}
	return o, lse, dq, dk, dv
}

func TestAttentionKernel(t *testing.T) {
	rng := rand.New(rand.NewPCG(21, 22))
	shapes := [][4]int{{1, 1, 1, 1}, {1, 1, 1, 4}, {2, 3, 5, 3}, {1, 2, 7, 8}, {1, 1, 70, 5}, {2, 1, 130, 2}}
	for _, sh := range shapes {
		for _, causal := range []bool{false, true} {
			b, h, tt, d := sh[0], sh[1], sh[2], sh[3]
			n := b * h * tt * d
			q, k, v, do := idxRandF64(rng, n), idxRandF64(rng, n), idxRandF64(rng, n), idxRandF64(rng, n)
			for i := range q {
				q[i] *= 2 // wide score range: exercises the running-max rescale
			}
			scale := 1 / math.Sqrt(float64(d))
			name := fmt.Sprintf("%v/causal=%v", sh, causal)

			out := make([]float64, n)
			lse := make([]float64, b*h*tt)
			Attention(out, lse, q, k, v, b, h, tt, d, scale, causal)
			dq, dk, dv := make([]float64, n), make([]float64, n), make([]float64, n)
			AttentionGrad(dq, dk, dv, do, q, k, v, out, lse, b, h, tt, d, scale, causal)

			q32, k32, v32, do32 := attnTo32(q), attnTo32(k), attnTo32(v), attnTo32(do)
			out32 := make([]float32, n)
			lse32 := make([]float32, b*h*tt)
			Attention(out32, lse32, q32, k32, v32, b, h, tt, d, scale, causal)
			dq32, dk32, dv32 := make([]float32, n), make([]float32, n), make([]float32, n)
			AttentionGrad(dq32, dk32, dv32, do32, q32, k32, v32, out32, lse32, b, h, tt, d, scale, causal)

			for hd := range b * h {
				at := hd * tt * d
				sl := func(s []float64) []float64 { return s[at : at+tt*d] }
				o, l, gq, gk, gv := attnRef(sl(q), sl(k), sl(v), sl(do), tt, d, scale, causal)
				attnClose(t, name+"/out", sl(out), o, 1e-12)
				// float64 keeps its statistics in float64: the gradients,
				// whose probabilities backward recomputes from lse, are as
				// exact as the output (an F32 lse gave them 1e-7·|lse|).
				attnClose(t, name+"/lse", lse[hd*tt:(hd+1)*tt], l, 1e-12)
				attnClose(t, name+"/dq", sl(dq), gq, 1e-12)
				attnClose(t, name+"/dk", sl(dk), gk, 1e-12)
				attnClose(t, name+"/dv", sl(dv), gv, 1e-12)
				s32 := func(s []float32) []float64 { return attnTo64(s[at : at+tt*d]) }
				attnClose(t, name+"/out32", s32(out32), o, 1e-5)
				attnClose(t, name+"/dq32", s32(dq32), gq, 1e-4)
				attnClose(t, name+"/dk32", s32(dk32), gk, 1e-4)
				attnClose(t, name+"/dv32", s32(dv32), gv, 1e-4)
			}
		}
	}
}

// TestAttentionLargeScores checks that scores far beyond exp's range give
// finite results (the online maximum keeps every exponent ≤ 0).
func TestAttentionLargeScores(t *testing.T) {
	tt, d := 3, 2
	q := []float64{100, 0, 0, 100, -100, 50}
	k := []float64{10, 0, 0, 10, 9, 9}
	v := []float64{1, 2, 3, 4, 5, 6}
	out := make([]float64, tt*d)
	lse := make([]float64, tt)
	Attention(out, lse, q, k, v, 1, 1, tt, d, 1, false)
	o, _, _, _, _ := attnRef(q, k, v, make([]float64, tt*d), tt, d, 1, false)
	attnClose(t, "large", out, o, 1e-12)
}

func attnClose(t *testing.T, name string, got, want []float64, tol float64) {
	t.Helper()
	for i := range want {
		if d := math.Abs(got[i] - want[i]); !(d <= tol*(1+math.Abs(want[i]))) {
			t.Fatalf("%s: element %d = %.10g, want %.10g", name, i, got[i], want[i])
		}
	}
}

// attnErr returns the largest |got−want|/(1+|want|).
func attnErr(got, want []float64) float64 {
	var e float64
	for i := range want {
		e = math.Max(e, math.Abs(got[i]-want[i])/(1+math.Abs(want[i])))
	}
	return e
}

func attnTo32(s []float64) []float32 {
	r := make([]float32, len(s))
	for i, v := range s {
		r[i] = float32(v)
	}
	return r
}

func attnTo64(s []float32) []float64 {
	r := make([]float64, len(s))
	for i, v := range s {
		r[i] = float64(v)
	}
	return r
}

// TestAttentionTiledMatchesScalar compares the tiled kernels with the
// scalar ones they replaced (attention_ref_test.go) on shapes with several
// query and key blocks, partial edge blocks and enough work to be split
// across the workers: float64 to 1e-12, float32 (float32 accumulation,
// exp32) to 2e-5 for the output and 1e-4 for the gradients, relative to
// 1 + |value|.
func TestAttentionTiledMatchesScalar(t *testing.T) {
	rng := rand.New(rand.NewPCG(31, 32))
	for _, sh := range [][4]int{{2, 3, 150, 40}, {1, 2, 64, 64}, {3, 1, 129, 17}, {1, 1, 300, 8}} {
		for _, causal := range []bool{false, true} {
			b, h, tt, d := sh[0], sh[1], sh[2], sh[3]
			n := b * h * tt * d
			q, k, v, do := idxRandF64(rng, n), idxRandF64(rng, n), idxRandF64(rng, n), idxRandF64(rng, n)
			for i := range q {
				q[i] *= 3
			}
			scale := 1 / math.Sqrt(float64(d))
			name := fmt.Sprintf("%v/causal=%v", sh, causal)
			run := func(fwd func(out, lse []float64), bwd func(dq, dk, dv, out, lse []float64)) (out, dq, dk, dv, lse []float64) {
				out, lse = make([]float64, n), make([]float64, b*h*tt)
				fwd(out, lse)
				dq, dk, dv = make([]float64, n), make([]float64, n), make([]float64, n)
				bwd(dq, dk, dv, out, lse)
				return
			}
			ro, rq, rk, rv, rl := run(
				func(out, lse []float64) { attnScalarForward(out, lse, q, k, v, b, h, tt, d, scale, causal) },
				func(dq, dk, dv, out, lse []float64) {
					attnScalarBackward(dq, dk, dv, do, q, k, v, out, lse, b, h, tt, d, scale, causal)
				})
			o, gq, gk, gv, l := run(
				func(out, lse []float64) { Attention(out, lse, q, k, v, b, h, tt, d, scale, causal) },
				func(dq, dk, dv, out, lse []float64) {
					AttentionGrad(dq, dk, dv, do, q, k, v, out, lse, b, h, tt, d, scale, causal)
				})
			attnClose(t, name+"/out", o, ro, 1e-12)
			attnClose(t, name+"/lse", l, rl, 1e-12)
			attnClose(t, name+"/dq", gq, rq, 1e-12)
			attnClose(t, name+"/dk", gk, rk, 1e-12)
			attnClose(t, name+"/dv", gv, rv, 1e-12)

			q32, k32, v32, do32 := attnTo32(q), attnTo32(k), attnTo32(v), attnTo32(do)
			o32, l32 := make([]float32, n), make([]float32, b*h*tt)
			Attention(o32, l32, q32, k32, v32, b, h, tt, d, scale, causal)
			dq32, dk32, dv32 := make([]float32, n), make([]float32, n), make([]float32, n)
			AttentionGrad(dq32, dk32, dv32, do32, q32, k32, v32, o32, l32, b, h, tt, d, scale, causal)
			attnClose(t, name+"/out32", attnTo64(o32), ro, 2e-5)
			attnClose(t, name+"/lse32", attnTo64(l32), rl, 1e-5)
			attnClose(t, name+"/dq32", attnTo64(dq32), rq, 1e-4)
			attnClose(t, name+"/dk32", attnTo64(dk32), rk, 1e-4)
			attnClose(t, name+"/dv32", attnTo64(dv32), rv, 1e-4)
			t.Logf("%s: float32 largest |got−want|/(1+|want|): out %.2g, lse %.2g, dq %.2g, dk %.2g, dv %.2g", name,
				attnErr(attnTo64(o32), ro), attnErr(attnTo64(l32), rl),
				attnErr(attnTo64(dq32), rq), attnErr(attnTo64(dk32), rk), attnErr(attnTo64(dv32), rv))
		}
	}
}
