package kernels

import (
	"flag"
	"math"
	"math/rand/v2"
	"runtime"
	"sync"
	"testing"
)

var fastmathAll = flag.Bool("fastmath.all", false, "check the fast float32 functions on all 2^32 inputs")

// ulp32 returns the spacing of float32 values at the correctly rounded
// value of w (2⁻¹⁴⁹ in the subnormal range).
func ulp32(w float64) float64 {
	r := math.Abs(float64(float32(w)))
	if r < 0x1p-126 {
		return 0x1p-149
	}
	_, e := math.Frexp(r) // r = f·2^e, f in [0.5, 1)
	return math.Ldexp(1, e-24)
}

// fmCase is a fast float32 function, its float64 reference and the error
// bound tested: |got − want| ≤ ulps·ulp32(want) + abs, and got is ±Inf
// exactly when float32(want) is.
type fmCase struct {
	name string
	f    func(float32) float32
	run  func(f Features, d, s []float32) // the contiguous run on the paths of f
	ref  func(float64) float64
	ulps float64
	abs  float64
	// cond, when set, widens the bound by condK·eps32·cond(x) (eps32 =
	// 2⁻²⁴) for functions whose value is sensitive to rounding inside:
	// what rounding one input or one intermediate by eps32 costs.
	cond  func(float64) float64
	condK float64
}

// geluRef and geluDerivRef are the tanh GELU and its derivative in
// float64 written as x·σ(w), w = 2·√(2/π)·(x + 0.044715x³): the same
// function as UnaryFunc's 0.5·x·(1 + tanh(w/2)), without that form's
// cancellation for x below about −6, where it returns 0 for values that
// are tiny but representable in float32.
func geluRef(x float64) float64 {
	w := 2 * sqrt2OverPi * (x + geluC*x*x*x)
	return x * sigmoid(w)
}

func geluDerivRef(x float64) float64 {
	w := 2 * sqrt2OverPi * (x + geluC*x*x*x)
	dw := 2 * sqrt2OverPi * (1 + 3*geluC*x*x)
	s, sc := sigmoid(w), sigmoid(-w)
	return s + x*s*sc*dw
}

func fmCases() []fmCase {
	g64, dg64 := geluRef, geluDerivRef
	unaryRun := func(op int) func(f Features, d, s []float32) {
		return func(f Features, d, s []float32) { fastUnaryOn(f, op, d, s) }
	}
	return []fmCase{
		{name: "exp", f: exp32, run: unaryRun(UExp), ref: math.Exp, ulps: 1.5},
		{name: "tanh", f: tanh32, run: unaryRun(UTanh), ref: math.Tanh, ulps: 2},
		{name: "sigmoid", f: sigmoid32, run: unaryRun(USigmoid), ref: sigmoid, ulps: 2.5},
		{name: "gelu_tanh", f: geluTanh32, run: unaryRun(UGeluTanh), ref: g64, ulps: 3, abs: 16 * 0x1p-149, condK: 4,
			// g = x·σ(w): w = x·(A0 + A1·x²) takes four roundings, each
			// costing |w|·(1−σ(w))·|g| ≤ |w·g|. Results in the subnormal
			// range carry σ(w)'s rounding times |x| < 11 (below −11
			// the result is 0).
			cond: func(x float64) float64 { return math.Abs(2 * sqrt2OverPi * (x + geluC*x*x*x) * g64(x)) }},
		{name: "gelu_tanh_deriv", f: geluTanhDeriv32, ref: dg64,
			run: func(f Features, d, s []float32) {
				ones := make([]float32, len(d))
				for i := range ones {
					ones[i] = 1
				}
				geluTanhGradOn(f, d, ones, s)
			},
			// Near its zero (x ≈ −0.75) the derivative is a difference of
			// terms of about 0.2: absolute error 2⁻²³; elsewhere what
			// rounding x costs, |x·g″(x)|·eps32.
			ulps: 3, abs: 0x1p-23, condK: 1,
			cond: func(x float64) float64 {
				// g″ = 2·s·sc·w′ + x·s·sc·((sc−s)·w′² + w″), s = σ(w), sc = 1−s.
				w := 2 * sqrt2OverPi * (x + geluC*x*x*x)
				dw := 2 * sqrt2OverPi * (1 + 3*geluC*x*x)
				s, sc := sigmoid(w), sigmoid(-w)
				return math.Abs(x * (2*s*sc*dw + x*s*sc*((sc-s)*dw*dw+2*sqrt2OverPi*6*geluC*x)))
			}},
	}
}

// asmPaths returns the assembly paths this CPU can take: as detected and,
// on an AVX-512 CPU, AVX2 alone.
func asmPaths() []Features {
	paths := []Features{CPU}
	if CPU.AVX512 {
		paths = append(paths, Features{AVX2FMA: CPU.AVX2FMA, F16C: CPU.F16C})
	}
	return paths
}

// runPieces runs run on d and s cut into pieces of 1 to 200 elements
// (p-th piece 1 + 37p mod 200), so that every remainder modulo 8, 16 and
// 64 meets the assembly's tails.
func runPieces(run func(f Features, d, s []float32), f Features, d, s []float32) {
	for lo, p := 0, 0; lo < len(d); p++ {
		hi := min(len(d), lo+1+37*p%200)
		run(f, d[lo:hi], s[lo:hi])
		lo = hi
	}
}

// fmCheck runs c on the inputs bits(lo), bits(lo+step), … up to hi
// (inclusive), in batches: the contiguous run on every path of asmPaths,
// in whole batches and in pieces, must give the scalar function's bits, and the scalar function must meet the bound. It returns
// the largest error in ulps (the part beyond abs and cond) and its input.
func fmCheck(t *testing.T, c fmCase, lo, hi, step uint64) (worst float64, at float32) {
	t.Helper()
	n := (hi-lo)/step + 1
	if n < 1<<20 {
		return fmCheckPart(t, c, lo, hi, step)
	}
	// Long sweeps: one goroutine per core, each an interleaved share.
	w := uint64(runtime.GOMAXPROCS(0))
	worsts := make([]float64, w)
	ats := make([]float32, w)
	var wg sync.WaitGroup
	for g := range w {
		wg.Go(func() { worsts[g], ats[g] = fmCheckPart(t, c, lo+g*step, hi, w*step) })
	}
	wg.Wait()
	for g := range w {
		if worsts[g] > worst {
			worst, at = worsts[g], ats[g]
		}
	}
	return worst, at
}

func fmCheckPart(t *testing.T, c fmCase, lo, hi, step uint64) (worst float64, at float32) {
	const batch = 4096
	xs := make([]float32, 0, batch)
	paths := asmPaths()
	got := make([][]float32, 2*len(paths))
	for i := range got {
		got[i] = make([]float32, batch)
	}
	fails := 0
	flush := func() {
		for i, f := range paths {
			c.run(f, got[2*i][:len(xs)], xs)
			runPieces(c.run, f, got[2*i+1][:len(xs)], xs)
		}
		for i, x := range xs {
			s := c.f(x)
			for j, g := range got {
				d := g[i]
				if math.Float32bits(s) != math.Float32bits(d) && !(s != s && d != d) {
					if fails++; fails <= 5 {
						t.Errorf("%s(%g [%#08x]): run on %s (pieces %v) gives %g [%#08x], scalar %g [%#08x]", c.name, x,
							math.Float32bits(x), paths[j/2].Path(), j%2 == 1, d, math.Float32bits(d), s, math.Float32bits(s))
					}
				}
			}
			w := c.ref(float64(x))
			if w != w || s != s {
				if (w != w) != (s != s) {
					if fails++; fails <= 5 {
						t.Errorf("%s(%g) = %g, want %g", c.name, x, s, w)
					}
				}
				continue
			}
			r := float32(w)
			if math.IsInf(float64(r), 0) || math.IsInf(float64(s), 0) {
				if r != s {
					if fails++; fails <= 5 {
						t.Errorf("%s(%g [%#08x]) = %g, want %g", c.name, x, math.Float32bits(x), s, w)
					}
				}
				continue
			}
			slack := c.abs
			if c.cond != nil {
				slack += c.condK * 0x1p-24 * c.cond(float64(x))
			}
			e := math.Abs(float64(s) - w)
			u := math.Max(0, e-slack) / ulp32(w)
			if u > worst {
				worst, at = u, x
			}
			if u > c.ulps {
				if fails++; fails <= 5 {
					t.Errorf("%s(%g [%#08x]) = %.9g, want %.12g: error %.3g ulp beyond %.3g (bound %g ulp)",
						c.name, x, math.Float32bits(x), s, w, e/ulp32(w), slack, c.ulps)
				}
			}
		}
		xs = xs[:0]
	}
	for b := lo; b <= hi; b += step {
		xs = append(xs, math.Float32frombits(uint32(b)))
		if len(xs) == batch {
			flush()
		}
	}
	flush()
	if fails > 5 {
		t.Errorf("%s: %d failures in all", c.name, fails)
	}
	return worst, at
}

// TestFastMath checks every fast function against its float64 reference
// and its assembly run against the scalar Go function, on a dense sweep:
// every 7th float32 pattern (exp; every 61st for the others) of |x| in
// [2⁻¹², 128], where the functions are not trivially ±1, 0, x or Inf
// (−short and −race: every 211th), every 997th over all 2³², the
// thousand patterns on either side of each boundary (clamps, overflow
// and underflow thresholds, tanh's switch at 0.625), and the special
// values. -args -fastmath.all checks all 2³² patterns (a few minutes).
func TestFastMath(t *testing.T) {
	boundaries := []float32{0, 88.72283, 89, -87.33654, -103.97208, -104, 0.625, 0.3465736, 9.01, 1e-4, 44.36, -44.36}
	for _, c := range fmCases() {
		t.Run(c.name, func(t *testing.T) {
			var worst float64
			var at float32
			note := func(w float64, a float32) {
				if w > worst {
					worst, at = w, a
				}
			}
			if *fastmathAll {
				note(fmCheck(t, c, 0, 1<<32-1, 1))
			} else {
				step := uint64(61)
				if c.name == "exp" {
					step = 7
				}
				if testing.Short() || raceEnabled {
					step = 211
				}
				lo, hi := uint64(math.Float32bits(0x1p-12)), uint64(math.Float32bits(128))
				note(fmCheck(t, c, lo, hi, step))
				note(fmCheck(t, c, lo|signBit32, hi|signBit32, step))
				note(fmCheck(t, c, 0, 1<<32-1, 997))
				for _, b := range boundaries {
					for _, v := range []float32{b, -b} {
						u := uint64(math.Float32bits(v))
						note(fmCheck(t, c, u-min(u&^signBit32, 1000), u+1000, 1))
					}
				}
			}
			specials := []float32{float32(math.Inf(1)), float32(math.Inf(-1)), float32(math.NaN()), 0,
				float32(math.Copysign(0, -1)), math.MaxFloat32, -math.MaxFloat32, math.SmallestNonzeroFloat32,
				-math.SmallestNonzeroFloat32, 0x1p-126, -0x1p-126}
			for _, x := range specials {
				b := uint64(math.Float32bits(x))
				note(fmCheck(t, c, b, b, 1))
			}
			t.Logf("%s: largest error %.3f ulp (beyond the absolute and conditioning allowance) at x = %g", c.name, worst, at)
		})
	}
}

// TestExp32Specials pins exp32's edges: exact values, the last finite
// and first infinite results, the last nonzero and first zero.
func TestExp32Specials(t *testing.T) {
	inf := float32(math.Inf(1))
	next := func(x float32, d int32) float32 { return math.Float32frombits(uint32(int32(math.Float32bits(x)) + d)) }
	overflow := float32(88.72284) // the first float32 whose exp rounds to +Inf
	underflow := float32(-103.97209)
	for _, c := range []struct{ x, want float32 }{
		{0, 1}, {float32(math.Copysign(0, -1)), 1}, {inf, inf}, {-inf, 0}, {1000, inf}, {-1000, 0},
		{overflow, inf}, {next(overflow, -1), float32(math.Exp(float64(next(overflow, -1))))},
		{-103.97207, math.SmallestNonzeroFloat32}, {underflow, 0}, {-104, 0},
	} {
		if got := exp32(c.x); got != c.want {
			t.Errorf("exp32(%g) = %g, want %g", c.x, got, c.want)
		}
	}
	if w := math.Exp(float64(overflow)); !math.IsInf(float64(float32(w)), 1) {
		t.Errorf("exp(%g) = %g rounds to a finite float32", overflow, w)
	}
	if w := math.Exp(float64(underflow)); float32(w) != 0 {
		t.Errorf("exp(%g) = %g rounds to %g, not 0", underflow, w, float32(w))
	}
	if got := exp32(float32(math.NaN())); got == got {
		t.Errorf("exp32(NaN) = %g, want NaN", got)
	}
}

// TestExpShiftRunSum checks expShiftRun's values and float64 sum on every
// assembly path for every length up to 200 and an offset start, against
// the scalar loop.
func TestExpShiftRunSum(t *testing.T) {
	src := make([]float32, 208)
	for i := range src {
		src[i] = float32(i%13) - 6.5 + float32(i)/64
	}
	for _, f := range asmPaths() {
		for n := range 201 {
			expShiftCheck(t, f, src, n)
		}
	}
}

// expShiftCheck checks expShiftOn(f) on n elements of src at offsets 0
// and 3, and that it writes nothing past them.
func expShiftCheck(t *testing.T, f Features, src []float32, n int) {
	t.Helper()
	for _, off := range []int{0, 3} {
		buf := make([]float32, n+64)
		for i := range buf {
			buf[i] = -7
		}
		d := buf[:n]
		s := src[off : off+n]
		sum := expShiftOn(f, d, s, 1.25)
		for i, v := range buf[n:] {
			if v != -7 {
				t.Fatalf("%s n=%d: element %d past the end written", f.Path(), n, n+i)
			}
		}
		var acc [8]float64
		for i, x := range s {
			want := exp32(x - 1.25)
			if d[i] != want {
				t.Fatalf("%s n=%d off=%d: d[%d] = %g, want %g", f.Path(), n, off, i, d[i], want)
			}
			acc[i&7] += float64(want)
		}
		var ws float64
		for _, v := range acc {
			ws += v
		}
		if sum != ws {
			t.Fatalf("%s n=%d off=%d: sum = %.17g, want %.17g", f.Path(), n, off, sum, ws)
		}
	}
}

// TestTileRows checks maxRows and expRows on a tile whose rows have every
// length from 0 to 77 (ld 80): values and sums equal the scalar loop's
// (exp32; eight running float64 sums over whole groups of 8, added as a
// tree, then the rest one by one), elements past each
// row's length are left alone, and the Go twins (CPU features off) give
// the same bits, on every assembly path.
func TestTileRows(t *testing.T) {
	const ld, width = 80, 77
	rows := rowsMax
	rng := rand.New(rand.NewPCG(51, 52))
	src := make([]float32, rows*ld)
	for i := range src {
		src[i] = float32(10 * rng.NormFloat64())
	}
	lens := make([]int, rows)
	shift := make([]float32, rows)
	for r := range lens {
		lens[r] = (r * 5) % (width + 1)
		shift[r] = float32(r%9) - 4
	}
	for _, path := range append(asmPaths(), Features{}) {
		asm := path.Path()
		saved := CPU
		CPU = path
		mx := make([]float32, rows)
		maxRows(src, ld, rows, lens, mx)
		s := append([]float32(nil), src...)
		sums := make([]float64, rows)
		expRows(s, ld, rows, lens, shift, sums)
		CPU = saved
		for r := range rows {
			want := float32(math.Inf(-1))
			var acc [8]float64
			for i := range ld {
				x := src[r*ld+i]
				if i >= lens[r] {
					if s[r*ld+i] != x {
						t.Fatalf("%s: row %d (len %d): element %d changed", asm, r, lens[r], i)
					}
					continue
				}
				want = max(want, x)
				e := exp32(x - shift[r])
				if s[r*ld+i] != e {
					t.Fatalf("%s: row %d: element %d = %g, want %g", asm, r, i, s[r*ld+i], e)
				}
				if i < lens[r]&^7 {
					acc[i&7] += float64(e)
				}
			}
			ws := ((acc[0] + acc[4]) + (acc[2] + acc[6])) + ((acc[1] + acc[5]) + (acc[3] + acc[7]))
			for i := lens[r] &^ 7; i < lens[r]; i++ {
				ws += float64(s[r*ld+i])
			}
			if mx[r] != want {
				t.Fatalf("%s: row %d (len %d): max %g, want %g", asm, r, lens[r], mx[r], want)
			}
			if sums[r] != ws {
				t.Fatalf("%s: row %d: sum %.17g, want %.17g", asm, r, sums[r], ws)
			}
		}
	}
}

// TestDSRows checks dsRows (assembly and Go twin) against the formula
// p·(dp − δ) in float32, for row lengths 0 to 21 past groups of 8.
func TestDSRows(t *testing.T) {
	const ld, rows = 24, 5
	rng := rand.New(rand.NewPCG(53, 54))
	p, dp := make([]float32, rows*ld), make([]float32, rows*ld)
	for i := range p {
		p[i], dp[i] = rng.Float32(), float32(rng.NormFloat64())
	}
	delta := []float32{0.5, -1, 0, 2, 0.25}
	for n := range 22 {
		for _, asm := range []bool{true, false} {
			got := append([]float32(nil), dp...)
			saved := CPU
			if !asm {
				CPU = Features{}
			}
			dsRows(got, p, ld, rows, n, delta)
			CPU = saved
			for i := range got {
				r, c := i/ld, i%ld
				want := dp[i]
				if c < n {
					want = p[i] * (dp[i] - delta[r])
				}
				if got[i] != want {
					t.Fatalf("n=%d asm=%v: element (%d, %d) = %g, want %g", n, asm, r, c, got[i], want)
				}
			}
		}
	}
}

// TestFastMathTails runs every fast function on every assembly path for
// every length up to 200 at offsets 0 and 5: each element equals the
// scalar function's bits and nothing past the end is written (the
// AVX-512 loops store their last vectors under masks).
func TestFastMathTails(t *testing.T) {
	rng := rand.New(rand.NewPCG(61, 62))
	src := make([]float32, 208)
	for i := range src {
		src[i] = float32(4 * rng.NormFloat64())
	}
	src[7], src[70], src[150] = float32(math.NaN()), -200, 200
	for _, c := range fmCases() {
		for _, f := range asmPaths() {
			for n := range 201 {
				for _, off := range []int{0, 5} {
					tailCheck(t, c, f, src[off:off+n])
				}
			}
		}
	}
}

// tailCheck runs c on xs with the features f into a guarded buffer.
func tailCheck(t *testing.T, c fmCase, f Features, xs []float32) {
	t.Helper()
	n := len(xs)
	buf := make([]float32, n+64)
	for i := range buf {
		buf[i] = -7
	}
	c.run(f, buf[:n], xs)
	for i, x := range xs {
		if w := c.f(x); math.Float32bits(buf[i]) != math.Float32bits(w) && !(w != w && buf[i] != buf[i]) {
			t.Fatalf("%s on %s, n=%d: element %d = %g, want %g", c.name, f.Path(), n, i, buf[i], w)
		}
	}
	for i, v := range buf[n:] {
		if v != -7 {
			t.Fatalf("%s on %s, n=%d: element %d past the end written", c.name, f.Path(), n, n+i)
		}
	}
}
