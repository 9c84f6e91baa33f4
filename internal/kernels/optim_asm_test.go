package kernels

import (
	"math"
	"math/rand/v2"
	"testing"
)

// adamLoopBefore is AdamUpdate's loop as it was before the assembly, the
// reference the new paths must reproduce bit for bit: verbatim but for
// float64 conversions that make explicit the rounding of every product
// which the default GOAMD64=v1 build gave it (Go fuses no multiply-add
// there); with GOAMD64=v3 Go may fuse the verbatim loop's a·b + c·d, and
// the reference would no longer be the v1 bits.
func adamLoopBefore(p, g, m, v []float32, a AdamUpdateArgs) {
	t := float64(a.Step)
	stepSize := a.LR / (1 - math.Pow(a.Beta1, t))
	bc2 := math.Sqrt(1 - math.Pow(a.Beta2, t))
	b1, b2 := a.Beta1, a.Beta2
	decay := 1.0
	coupled := 0.0
	if a.Decoupled {
		decay = 1 - a.LR*a.WeightDecay
	} else {
		coupled = a.WeightDecay
	}
	for i := range p {
		pi := float64(p[i]) * decay
		gi := float64(g[i]) + float64(coupled*pi)
		mi := float64(b1*float64(m[i])) + float64((1-b1)*gi)
		vi := float64(b2*float64(v[i])) + float64((1-b2)*gi*gi)
		m[i], v[i] = float32(mi), float32(vi)
		p[i] = float32(pi - float64(stepSize*mi)/(math.Sqrt(vi)/bc2+a.Eps))
	}
}

// optimPaths are the kernel paths this machine can run: the assembly
// paths it has, and Go.
func optimPaths() []struct {
	name string
	f    Features
} {
	all := []struct {
		name string
		f    Features
	}{{"avx512", CPU}, {"avx2", Features{AVX2FMA: CPU.AVX2FMA, F16C: CPU.F16C}}, {"go", Features{}}}
	var out []struct {
		name string
		f    Features
	}
	for _, p := range all {
		if p.name == "go" || (p.name == "avx512" && CPU.AVX512) || (p.name == "avx2" && CPU.AVX2FMA) {
			out = append(out, p)
		}
	}
	return out
}

// optEdge draws float32 values: mostly of random sign and magnitude over
// the whole exponent range (denormals included), sometimes ±0, ±Inf, NaN
// or the extremes.
func optEdge(rng *rand.Rand, n int, nonNeg bool) []float32 {
	special := []float32{0, float32(math.Copysign(0, -1)), float32(math.Inf(1)), float32(math.Inf(-1)),
		float32(math.NaN()), math.MaxFloat32, math.SmallestNonzeroFloat32, 1e-40, 1}
	out := make([]float32, n)
	for i := range out {
		if rng.IntN(8) == 0 {
			out[i] = special[rng.IntN(len(special))]
		} else {
			out[i] = float32(math.Ldexp(rng.Float64(), rng.IntN(260)-150))
			if rng.IntN(2) == 0 {
				out[i] = -out[i]
			}
		}
		if nonNeg && rng.IntN(4) != 0 {
			out[i] = float32(math.Abs(float64(out[i])))
		}
	}
	return out
}

// optSameBits reports whether two float32 runs hold the same bits, any NaN
// matching any NaN (which NaN payload survives an operation on two NaNs
// depends on operand order, which Go does not fix).
func optSameBits(a, b []float32) (int, bool) {
	for i := range a {
		if math.Float32bits(a[i]) != math.Float32bits(b[i]) && !(a[i] != a[i] && b[i] != b[i]) {
			return i, false
		}
	}
	return -1, true
}

// adamArgCases cover Adam, Adam with weight decay and AdamW, the first
// and a late step, and tiny, usual and huge learning rates and eps.
func adamArgCases() []AdamUpdateArgs {
	var out []AdamUpdateArgs
	for _, lr := range []float64{1e-30, 1e-3, 1e20} {
		for _, step := range []int{1, 7, 100000} {
			for _, wd := range []struct {
				v float64
				d bool
			}{{0, false}, {0.1, false}, {0.05, true}} {
				out = append(out, AdamUpdateArgs{LR: lr, Beta1: 0.9, Beta2: 0.999, Eps: 1e-8,
					WeightDecay: wd.v, Step: step, Decoupled: wd.d})
			}
		}
	}
	return append(out, AdamUpdateArgs{LR: 1e-2, Beta1: 0.5, Beta2: 0.75, Eps: 1e-30, Step: 3},
		AdamUpdateArgs{LR: 1e-2, Beta1: 0, Beta2: 0, Eps: 0, WeightDecay: 2, Step: 1})
}

// TestAdamUpdateF32BitExact runs AdamUpdate on float32 with every path of
// this machine, on random and edge values, and wants the bits of the loop
// before the assembly.
func TestAdamUpdateF32BitExact(t *testing.T) {
	saved, paths := CPU, optimPaths()
	defer func() { CPU = saved }()
	rng := rand.New(rand.NewPCG(21, 22))
	for _, n := range []int{1, 7, 8, 15, 16, 17, 31, 33, 1000, 3*optimGrain + 13} {
		for ai, a := range adamArgCases() {
			edges := n <= 1000 && ai%3 == 0
			in := make([][]float32, 4)
			for k := range in {
				if edges {
					in[k] = optEdge(rng, n, k == 3)
				} else {
					in[k] = optTo32(optRand(rng, n, -1, 1))
				}
			}
			if !edges {
				in[3] = optTo32(optRand(rng, n, 0, 0.01))
			}
			want := clone4(in)
			adamLoopBefore(want[0], want[1], want[2], want[3], a)
			for _, path := range paths {
				CPU = path.f
				got := clone4(in)
				AdamUpdate(got[0], got[1], got[2], got[3], a)
				for k, what := range []string{"p", "g", "m", "v"} {
					if i, ok := optSameBits(got[k], want[k]); !ok {
						t.Fatalf("%s n=%d args %+v: %s[%d] = %v (%#x), want %v (%#x); in p,g,m,v = %v %v %v %v",
							path.name, n, a, what, i, got[k][i], math.Float32bits(got[k][i]), want[k][i],
							math.Float32bits(want[k][i]), in[0][i], in[1][i], in[2][i], in[3][i])
					}
				}
			}
		}
	}
	for _, p := range paths {
		t.Logf("path %s checked", p.name)
	}
}

func clone4(in [][]float32) [][]float32 {
	out := make([][]float32, len(in))
	for i, s := range in {
		out[i] = append([]float32(nil), s...)
	}
	return out
}

// sgdLoopBefore is SGDUpdate's loop as it was before the assembly, the
// reference, with its products' rounding explicit as in adamLoopBefore.
func sgdLoopBefore(p, g, buf []float32, a SGDUpdateArgs) {
	mu := a.Momentum
	if mu == 0 {
		for i := range p {
			pi := float64(p[i])
			d := float64(g[i]) + float64(a.WeightDecay*pi)
			p[i] = float32(pi - float64(a.LR*d))
		}
		return
	}
	for i := range p {
		pi := float64(p[i])
		gi := float64(g[i]) + float64(a.WeightDecay*pi)
		b := gi
		if !a.First {
			b = float64(mu*float64(buf[i])) + float64((1-a.Dampening)*gi)
		}
		buf[i] = float32(b)
		d := b
		if a.Nesterov {
			d = gi + float64(mu*b)
		}
		p[i] = float32(pi - float64(a.LR*d))
	}
}

// TestSGDUpdateF32BitExact is TestAdamUpdateF32BitExact for SGDUpdate:
// plain, with weight decay, momentum (first and later steps), dampening
// and Nesterov, tiny to huge learning rates.
func TestSGDUpdateF32BitExact(t *testing.T) {
	saved, paths := CPU, optimPaths()
	defer func() { CPU = saved }()
	rng := rand.New(rand.NewPCG(23, 24))
	var cases []SGDUpdateArgs
	for _, lr := range []float64{1e-30, 1e-2, 1e20} {
		for _, mu := range []float64{0, 0.9} {
			for _, first := range []bool{false, true} {
				for _, nest := range []bool{false, true} {
					cases = append(cases, SGDUpdateArgs{LR: lr, Momentum: mu, Dampening: 0.3 * float64(len(cases)%2),
						WeightDecay: 0.01 * float64(len(cases)%3), Nesterov: nest && mu != 0, First: first})
				}
			}
		}
	}
	for _, n := range []int{1, 3, 4, 7, 8, 9, 17, 1000, 3*optimGrain + 13} {
		for ci, a := range cases {
			edges := n <= 1000 && ci%2 == 0
			in := make([][]float32, 3)
			for k := range in {
				if edges {
					in[k] = optEdge(rng, n, false)
				} else {
					in[k] = optTo32(optRand(rng, n, -1, 1))
				}
			}
			want := clone4(in)
			sgdLoopBefore(want[0], want[1], want[2], a)
			for _, path := range paths {
				CPU = path.f
				got := clone4(in)
				SGDUpdate(got[0], got[1], got[2], a)
				for k, what := range []string{"p", "g", "buf"} {
					if i, ok := optSameBits(got[k], want[k]); !ok {
						t.Fatalf("%s n=%d args %+v: %s[%d] = %v (%#x), want %v (%#x); in p,g,buf = %v %v %v",
							path.name, n, a, what, i, got[k][i], math.Float32bits(got[k][i]), want[k][i],
							math.Float32bits(want[k][i]), in[0][i], in[1][i], in[2][i])
					}
				}
			}
		}
	}
}
