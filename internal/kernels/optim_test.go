package kernels

import (
	"math"
	"math/rand/v2"
	"testing"
)

// optSizes cover one element, odd sizes, and sizes split across workers.
var optSizes = []int{1, 3, 17, 1000, 3*optimGrain + 5}

func optRand(rng *rand.Rand, n int, lo, hi float64) []float64 {
	v := make([]float64, n)
	for i := range v {
		v[i] = lo + (hi-lo)*rng.Float64()
	}
	return v
}

// adamRef is Adam by the textbook definition with bias-corrected moments,
// one element at a time, in float64.
func adamRef(p, g, m, v []float64, lr, b1, b2, eps, wd float64, t int, decoupled bool) {
	for i := range p {
		grad := g[i]
		if decoupled {
			p[i] -= lr * wd * p[i]
		} else {
			grad += wd * p[i]
		}
		m[i] = b1*m[i] + (1-b1)*grad
		v[i] = b2*v[i] + (1-b2)*grad*grad
		mHat := m[i] / (1 - math.Pow(b1, float64(t)))
		vHat := v[i] / (1 - math.Pow(b2, float64(t)))
		p[i] -= lr * mHat / (math.Sqrt(vHat) + eps)
	}
}

// sgdRef is PyTorch's SGD by its documented definition, in float64.
func sgdRef(p, g, buf []float64, lr, mu, damp, wd float64, nesterov, first bool) {
	for i := range p {
		d := g[i] + wd*p[i]
		if mu != 0 {
			if first {
				buf[i] = d
			} else {
				buf[i] = mu*buf[i] + (1-damp)*d
			}
			if nesterov {
				d += mu * buf[i]
			} else {
				d = buf[i]
			}
		}
		p[i] -= lr * d
	}
}

func optTo32(v []float64) []float32 {
	out := make([]float32, len(v))
	for i, x := range v {
		out[i] = float32(x)
	}
	return out
}

func optWiden(v []float32) []float64 {
	out := make([]float64, len(v))
	for i, x := range v {
		out[i] = float64(x)
	}
	return out
}

// optMaxRel returns the largest |got−want|/max(|want|, 1) and its index:
// relative error, absolute below 1 (the values here are of order 1).
func optMaxRel[T Float](got []T, want []float64) (float64, int) {
	worst, at := 0.0, -1
	for i := range want {
		e := math.Abs(float64(got[i])-want[i]) / math.Max(math.Abs(want[i]), 1)
		if !(e <= worst) {
			worst, at = e, i
		}
	}
	return worst, at
}

func TestAdamUpdateKernel(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	cases := []struct {
		name      string
		wd        float64
		decoupled bool
	}{{"adam", 0, false}, {"adam_wd", 0.1, false}, {"adamw", 0.05, true}}
	for _, c := range cases {
		for _, n := range optSizes {
			p0, m0 := optRand(rng, n, -1, 1), optRand(rng, n, -0.1, 0.1)
			v0 := optRand(rng, n, 0, 0.01)
			// References and kernels start from the same (F32-representable)
			// values so that F32 is compared with exact inputs.
			p0, m0, v0 = optWiden(optTo32(p0)), optWiden(optTo32(m0)), optWiden(optTo32(v0))
			rp, rm, rv := optClone(p0), optClone(m0), optClone(v0)
			p64, m64, v64 := optClone(p0), optClone(m0), optClone(v0)
			p32, m32, v32 := optTo32(p0), optTo32(m0), optTo32(v0)
			for step := 1; step <= 3; step++ {
				g := optWiden(optTo32(optRand(rng, n, -2, 2)))
				a := AdamUpdateArgs{LR: 1e-2, Beta1: 0.9, Beta2: 0.999, Eps: 1e-8, WeightDecay: c.wd, Step: step + 4, Decoupled: c.decoupled}
				adamRef(rp, g, rm, rv, a.LR, a.Beta1, a.Beta2, a.Eps, a.WeightDecay, a.Step, a.Decoupled)
				AdamUpdate(p64, g, m64, v64, a)
				AdamUpdate(p32, optTo32(g), m32, v32, a)
			}
			for _, chk := range []struct {
				what string
				got  []float64
				want []float64
			}{{"p", p64, rp}, {"m", m64, rm}, {"v", v64, rv}} {
				if e, i := optMaxRel(chk.got, chk.want); e > 1e-12 {
					t.Errorf("%s n=%d F64 %s[%d] = %v, want %v (rel %.2g)", c.name, n, chk.what, i, chk.got[i], chk.want[i], e)
				}
			}
			for _, chk := range []struct {
				what string
				got  []float32
				want []float64
			}{{"p", p32, rp}, {"m", m32, rm}, {"v", v32, rv}} {
				if e, i := optMaxRel(chk.got, chk.want); e > 1e-5 {
					t.Errorf("%s n=%d F32 %s[%d] = %v, want %v (rel %.2g)", c.name, n, chk.what, i, chk.got[i], chk.want[i], e)
				}
			}
		}
	}
}

func TestSGDUpdateKernel(t *testing.T) {
	rng := rand.New(rand.NewPCG(13, 14))
	cases := []struct {
		name             string
		mu, damp, wd     float64
		nesterov         bool
		firstStepPresent bool
	}{
		{"plain", 0, 0, 0, false, false},
		{"wd", 0, 0, 0.01, false, false},
		{"momentum", 0.9, 0, 0, false, true},
		{"dampening_wd", 0.8, 0.3, 0.02, false, true},
		{"nesterov", 0.9, 0, 0.01, true, true},
	}
	for _, c := range cases {
		for _, n := range optSizes {
			p0 := optWiden(optTo32(optRand(rng, n, -1, 1)))
			rp, p64, p32 := optClone(p0), optClone(p0), optTo32(p0)
			var rb, b64 []float64
			var b32 []float32
			if c.mu != 0 {
				// A buffer full of garbage: the first step must overwrite it.
				rb, b64, b32 = make([]float64, n), optRand(rng, n, 5, 6), optTo32(optRand(rng, n, 5, 6))
			}
			for step := range 3 {
				g := optWiden(optTo32(optRand(rng, n, -2, 2)))
				a := SGDUpdateArgs{LR: 0.1, Momentum: c.mu, Dampening: c.damp, WeightDecay: c.wd, Nesterov: c.nesterov, First: step == 0}
				sgdRef(rp, g, rb, a.LR, a.Momentum, a.Dampening, a.WeightDecay, a.Nesterov, a.First)
				SGDUpdate(p64, g, b64, a)
				SGDUpdate(p32, optTo32(g), b32, a)
			}
			if e, i := optMaxRel(p64, rp); e > 1e-12 {
				t.Errorf("%s n=%d F64 p[%d] = %v, want %v", c.name, n, i, p64[i], rp[i])
			}
			if e, i := optMaxRel(p32, rp); e > 1e-5 {
				t.Errorf("%s n=%d F32 p[%d] = %v, want %v", c.name, n, i, p32[i], rp[i])
			}
			if c.mu != 0 {
				if e, i := optMaxRel(b64, rb); e > 1e-12 {
					t.Errorf("%s n=%d F64 buf[%d] = %v, want %v", c.name, n, i, b64[i], rb[i])
				}
				if e, i := optMaxRel(b32, rb); e > 1e-5 {
					t.Errorf("%s n=%d F32 buf[%d] = %v, want %v", c.name, n, i, b32[i], rb[i])
				}
			}
		}
	}
}

func TestSumSquaresKernel(t *testing.T) {
	rng := rand.New(rand.NewPCG(15, 16))
	for _, n := range []int{0, 1, 3, 4095, 4096, 4097, 5*sumSquaresChunk + 3, 40 * sumSquaresChunk} {
		x := optRand(rng, n, -3, 3)
		x32 := optTo32(x)
		var want, want32 float64
		for i := range x {
			want += x[i] * x[i]
			want32 += float64(x32[i]) * float64(x32[i])
		}
		got := SumSquares(x)
		if math.Abs(got-want) > 1e-12*math.Max(want, 1) {
			t.Errorf("SumSquares(F64, n=%d) = %v, want %v", n, got, want)
		}
		if got32 := SumSquares(x32); math.Abs(got32-want32) > 1e-12*math.Max(want32, 1) {
			t.Errorf("SumSquares(F32, n=%d) = %v, want %v", n, got32, want32)
		}
		if again := SumSquares(x); again != got {
			t.Errorf("SumSquares(n=%d) not repeatable: %v then %v", n, got, again)
		}
		t.Logf("n=%d: Σx² = %.6g (naive %.6g)", n, got, want)
	}
	if got := SumSquares([]float64{math.Inf(1), 1}); !math.IsInf(got, 1) {
		t.Errorf("SumSquares([+Inf 1]) = %v, want +Inf", got)
	}
	if got := SumSquares([]float32{float32(math.NaN()), 1}); !math.IsNaN(got) {
		t.Errorf("SumSquares([NaN 1]) = %v, want NaN", got)
	}
}

func optClone(v []float64) []float64 { return append([]float64(nil), v...) }
