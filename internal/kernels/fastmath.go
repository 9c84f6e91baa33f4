package kernels

import (
	"math"
	"sync/atomic"
	"unsafe"
)

// Fast float32 transcendentals: exp, tanh, sigmoid and the tanh GELU with
// its derivative, for the float32 paths of Unary, UnaryGrad, Softmax,
// CrossEntropy and Attention. float64 keeps package math.
//
// exp32(x) = 2^n·e^r with n = round(x·log2 e) and r = x − n·ln 2 (ln 2 in
// two parts, Cody–Waite, the first with 9 significant bits so that n·C1 is
// exact), e^r = 1 + r + r²·P(r) with P of degree 4 fitted (minimax,
// relative) on |r| ≤ 0.36: truncation error 4·10⁻⁹, far below float32
// rounding. 2^n is applied as two factors 2^⌊n/2⌋·2^(n−⌊n/2⌋), so that
// results in the subnormal range are rounded once and 2^128 (for x just
// below the overflow threshold) needs no special case. x above 89 is
// clamped to 89 (the result overflows to +Inf all the same); x below −104
// gives 0 directly (the assembly masks those lanes: computing them would
// underflow, and multiplies with subnormal results run several times
// slower, which the −Inf of causal masks would hit on every call). NaN is
// returned as is.
//
// Error of exp32 against the exact exponential (math.Exp in float64),
// measured on all 2³² float32 inputs: at most 1.022 ulp of the correctly
// rounded result (relative error below 1.022·2⁻²³ ≈ 1.22·10⁻⁷ for normal
// results; subnormal and underflowing results to within 1.022·2⁻¹⁴⁹
// absolute, and 0 for x < −104); +Inf exactly from 88.72284 (the first
// float32 whose exponential rounds to +Inf) up, NaN for NaN. TestFastMath
// asserts ≤ 1.5 ulp on a dense sweep (-args -fastmath.all: every input).
//
// tanh32: for |x| < 0.625, x + x³·Q(x²) (Q of degree 4, minimax); above,
// (1−e)/(1+e) with e = exp32(−2|x|), sign restored. sigmoid32: e =
// exp32(−|x|), the result 1/(1+e) for x ≥ 0 and e/(1+e) for x < 0 (no
// cancellation either side, no overflow). The tanh GELU is written as
// x·σ(2u), u = √(2/π)·(x + 0.044715x³), which equals 0.5·x·(1+tanh u)
// without its cancellation for negative x; its derivative is σ(w) +
// x·σ(w)·(1−σ(w))·w′ with w = 2u and 1−σ(w) taken from the same e.
// Their bounds, measured and tested, are in fmCases (fastmath_test.go) and
// docs/PERFORMANCE.md: tanh ≤ 1.51 ulp, sigmoid ≤ 2.41 ulp, the GELU and
// its derivative within a few ulp plus what the rounding of their inner
// w = x·(A0 + A1·x²) costs where they are ill-conditioned.
//
// Every function has an AVX2 twin (fastmath_amd64.s) and an AVX-512 twin
// (fastmath_avx512_amd64.s, 16 lanes, four vectors in flight, the last
// partial vectors under masks) that perform the same float32 operations in
// the same order without fused multiply-adds, so the three give identical
// bits (tested on every input of the sweeps); the Go
// code spells each product as float32(a*b) so that the compiler cannot fuse
// it either.

const (
	expHi    float32 = 89   // inputs above are clamped: the result overflows to +Inf
	expLo    float32 = -104 // inputs below give 0 (exp(−104) < 2⁻¹⁵⁰)
	expLog2e float32 = math.Log2E
	expMagic float32 = 12582912 // 1.5·2²³: adding it rounds to an integer
	expC1    float32 = 0.693359375
	expC2    float32 = -2.12194442e-4 // float32(ln 2 − C1)
	expP0    float32 = 0.499999911
	expP1    float32 = 0.166664973
	expP2    float32 = 0.0416686684
	expP3    float32 = 0.00837149564
	expP4    float32 = 0.0013808849

	tanhCut float32 = 0.625
	tanhQ0  float32 = -0.333332807
	tanhQ1  float32 = 0.133314416
	tanhQ2  float32 = -0.0537397154
	tanhQ3  float32 = 0.0206390843
	tanhQ4  float32 = -0.00570498407

	geluA0   float32 = 1.59576917   // 2·√(2/π)
	geluA1   float32 = 0.0713548139 // 2·√(2/π)·0.044715
	geluA1x3 float32 = 0.214064449  // 3·geluA1

	signBit32 = 1 << 31
)

// exp32 returns e^x (see the file comment for the method and its error).
func exp32(x float32) float32 {
	if x != x {
		return x
	}
	if x < expLo {
		return 0
	}
	x = min(x, expHi)
	k := float32(x*expLog2e) + expMagic
	n := int32(math.Float32bits(k) - math.Float32bits(expMagic))
	f := k - expMagic
	r := x - float32(f*expC1)
	r -= float32(f * expC2)
	r2 := float32(r * r)
	p := float32(expP4*r) + expP3
	p = float32(p*r) + expP2
	p = float32(p*r) + expP1
	p = float32(p*r) + expP0
	y := float32(p*r2) + r + 1
	n1 := n >> 1
	return y * pow2f(n1) * pow2f(n-n1)
}

// pow2f returns 2^n for n in [−126, 127].
func pow2f(n int32) float32 { return math.Float32frombits(uint32(n+127) << 23) }

// tanh32 returns tanh(x).
func tanh32(x float32) float32 {
	if x != x {
		return x
	}
	a := math.Float32frombits(math.Float32bits(x) &^ signBit32)
	if a < tanhCut {
		x2 := float32(x * x)
		q := float32(tanhQ4*x2) + tanhQ3
		q = float32(q*x2) + tanhQ2
		q = float32(q*x2) + tanhQ1
		q = float32(q*x2) + tanhQ0
		return float32(float32(x2*q)*x) + x
	}
	e := exp32(-2 * a)
	t := (1 - e) / (1 + e)
	return math.Float32frombits(math.Float32bits(t) | math.Float32bits(x)&signBit32)
}

// sigmoid32 returns 1/(1+e^−x), computed as 1/(1+e) for x ≥ 0 and e/(1+e)
// for x < 0 with e = e^−|x|.
func sigmoid32(x float32) float32 {
	e := exp32(math.Float32frombits(math.Float32bits(x) | signBit32))
	num := float32(1)
	if math.Float32bits(x)&signBit32 != 0 {
		num = e
	}
	return num / (1 + e)
}

// geluW returns w = 2·√(2/π)·(x + 0.044715x³) and x².
func geluW(x float32) (w, x2 float32) {
	x2 = float32(x * x)
	return float32((float32(geluA1*x2) + geluA0) * x), x2
}

// geluTanh32 returns the tanh GELU 0.5·x·(1 + tanh(√(2/π)·(x+0.044715x³))).
func geluTanh32(x float32) float32 {
	w, _ := geluW(x)
	return x * sigmoid32(w)
}

// geluTanhDeriv32 returns the derivative of geluTanh32 at x.
func geluTanhDeriv32(x float32) float32 {
	w, x2 := geluW(x)
	e := exp32(math.Float32frombits(math.Float32bits(w) | signBit32))
	r := 1 / (1 + e)
	er := e * r
	s, sc := r, er // σ(w), 1−σ(w)
	if math.Float32bits(w)&signBit32 != 0 {
		s, sc = er, r
	}
	// w′, kept finite so that where x² overflows (and σ(w)·(1−σ(w)) is 0)
	// the product is 0 rather than 0·Inf.
	dw := min(float32(geluA1x3*x2)+geluA0, math.MaxFloat32)
	return s + float32(float32(float32(x*s)*sc)*dw)
}

// Contiguous runs. Each takes the AVX-512 loop for the whole run when the
// CPU has AVX-512, else the AVX2 loop for whole groups of 8 when it has
// AVX2 and FMA (FMA is not used, but it marks the same CPUs as the other
// float paths) and the Go twin for the rest. The ...On forms take the
// features to use, so that tests can run every path.

// fastUnaryOp reports whether op has a float32 fast path.
func fastUnaryOp(op int) bool {
	return op == UExp || op == UTanh || op == USigmoid || op == UGeluTanh
}

// fastScalar returns the scalar function of a fast op.
func fastScalar(op int) func(float32) float32 {
	switch op {
	case UExp:
		return exp32
	case UTanh:
		return tanh32
	case USigmoid:
		return sigmoid32
	case UGeluTanh:
		return geluTanh32
	}
	panic("kernels: no fast float32 function for this op")
}

// asmLen returns how many leading elements of a run of n the assembly of
// f takes: all on AVX-512, whole groups of 8 on AVX2, none without.
func asmLen(f Features, n int) int {
	switch {
	case f.AVX512:
		return n
	case f.AVX2FMA:
		return n &^ 7
	}
	return 0
}

// fastUnaryPart writes d = op(s) for a fast op (len(s) ≥ len(d)).
func fastUnaryPart(op int, d, s []float32) { fastUnaryOn(CPU, op, d, s) }

// fastUnaryOn is fastUnaryPart on the paths of f.
func fastUnaryOn(f Features, op int, d, s []float32) {
	n := len(d)
	s = s[:n]
	k := asmLen(f, n)
	if k > 0 {
		fastUnaryAsm(f.AVX512, op, d[:k], s[:k])
	}
	g := fastScalar(op)
	for i := k; i < n; i++ {
		d[i] = g(s[i])
	}
}

// fastUnaryAsm writes d = op(s) in assembly: AVX-512 when wide, else AVX2
// (len(d) a multiple of 8).
func fastUnaryAsm(wide bool, op int, d, s []float32) {
	n := len(d)
	var acc [8]float64
	switch {
	case op == UExp && wide:
		expShiftF32AVX512(&d[0], &s[0], n, 0, &acc)
	case op == UTanh && wide:
		tanhF32AVX512(&d[0], &s[0], n)
	case op == USigmoid && wide:
		sigmoidF32AVX512(&d[0], &s[0], n)
	case op == UGeluTanh && wide:
		geluTanhF32AVX512(&d[0], &s[0], n)
	case op == UExp:
		expShiftF32(&d[0], &s[0], n, 0, &acc)
	case op == UTanh:
		tanhF32(&d[0], &s[0], n)
	case op == USigmoid:
		sigmoidF32(&d[0], &s[0], n)
	case op == UGeluTanh:
		geluTanhF32(&d[0], &s[0], n)
	}
}

// fastParallelMin is the run length from which a fast unary op is split
// across the workers, in pieces of at least fastGrain: at about 1 ns per
// element in assembly a piece of 2^16 is worth waking a parked worker for
// (100–150 µs on the development VM).
const (
	fastParallelMin = 1 << 17
	fastGrain       = 1 << 16
)

// fastUnaryRun writes d = op(s) for a fast op, split across the workers
// when long.
func fastUnaryRun(op int, d, s []float32) {
	if len(d) < fastParallelMin {
		fastUnaryPart(op, d, s)
		return
	}
	claimFor(len(d), fastGrain, func(lo, hi int) { fastUnaryPart(op, d[lo:hi], s[lo:hi]) })
}

// geluTanhGradRun writes dx = dy·gelu′(x).
func geluTanhGradRun(dx, dy, x []float32) {
	if len(dx) < fastParallelMin {
		geluTanhGradOn(CPU, dx, dy, x)
		return
	}
	claimFor(len(dx), fastGrain, func(lo, hi int) { geluTanhGradOn(CPU, dx[lo:hi], dy[lo:hi], x[lo:hi]) })
}

// geluTanhGradOn writes dx = dy·gelu′(x) on the paths of f.
func geluTanhGradOn(f Features, dx, dy, x []float32) {
	n := len(dx)
	dy, x = dy[:n], x[:n]
	k := asmLen(f, n)
	switch {
	case k > 0 && f.AVX512:
		geluTanhGradF32AVX512(&dx[0], &dy[0], &x[0], k)
	case k > 0:
		geluTanhGradF32(&dx[0], &dy[0], &x[0], k)
	}
	for i := k; i < n; i++ {
		dx[i] = dy[i] * geluTanhDeriv32(x[i])
	}
}

// expShiftRun writes d = exp32(s − shift) (len(s) ≥ len(d)) and returns the
// sum of d in float64: eight running sums, element i into sum i mod 8,
// added in order at the end (the same in assembly and Go).
func expShiftRun(d, s []float32, shift float32) float64 { return expShiftOn(CPU, d, s, shift) }

// expShiftOn is expShiftRun on the paths of f.
func expShiftOn(f Features, d, s []float32, shift float32) float64 {
	n := len(d)
	s = s[:n]
	var acc [8]float64
	k := asmLen(f, n)
	switch {
	case k > 0 && f.AVX512:
		expShiftF32AVX512(&d[0], &s[0], k, shift, &acc)
	case k > 0:
		expShiftF32(&d[0], &s[0], k, shift, &acc)
	}
	for i := k; i < n; i++ {
		d[i] = exp32(s[i] - shift)
		acc[i&7] += float64(d[i])
	}
	var sum float64
	for _, v := range acc {
		sum += v
	}
	return sum
}

// rowsMax is the most rows maxRows and expRows take per call.
const rowsMax = 64

// checkRows panics unless rows ≤ rowsMax and every row r of s (ld apart)
// holds lens[r] elements, and the per-row slices hold rows values.
func checkRows(n, ld, rows int, lens []int, per ...int) {
	if rows > rowsMax || len(lens) < rows {
		panic("kernels: too many rows for one tile call")
	}
	for r := range rows {
		if lens[r] < 0 || r*ld+lens[r] > n {
			panic("kernels: tile row outside its slice")
		}
	}
	for _, p := range per {
		if p < rows {
			panic("kernels: per-row slice too short")
		}
	}
}

// maxRows sets out[r] to the largest of the first lens[r] elements of row
// r of s (rows ld apart; −Inf when lens[r] is 0), r < rows ≤ rowsMax. A
// NaN element may or may not be returned.
func maxRows(s []float32, ld, rows int, lens []int, out []float32) {
	checkRows(len(s), ld, rows, lens, len(out))
	var body [rowsMax]int
	asm := CPU.AVX2FMA && rows > 0
	if asm {
		for r := range rows {
			body[r] = lens[r] &^ 7
		}
		maxRowsF32(unsafe.SliceData(s), ld, rows, &body[0], &out[0])
	}
	for r := range rows {
		m := float32(math.Inf(-1))
		if asm {
			m = out[r]
		}
		for _, x := range s[r*ld+body[r] : r*ld+lens[r]] {
			m = max(m, x)
		}
		out[r] = m
	}
}

// expRows sets the first lens[r] elements x of row r of s (rows ld apart)
// to exp32(x − shift[r]), r < rows ≤ rowsMax, and, when sums is not nil,
// sums[r] to their sum in float64: over the whole groups of 8, eight
// running sums a_l (element i into a_(i mod 8)) added as ((a0+a4)+(a2+a6))
// + ((a1+a5)+(a3+a7)), then the remaining elements one by one (the same in
// assembly and Go).
func expRows(s []float32, ld, rows int, lens []int, shift []float32, sums []float64) {
	var tmp [rowsMax]float64
	if sums == nil {
		sums = tmp[:]
	}
	checkRows(len(s), ld, rows, lens, len(shift), len(sums))
	var body [rowsMax]int
	for r := range rows {
		body[r] = lens[r] &^ 7
	}
	asm := CPU.AVX2FMA && rows > 0
	switch {
	case asm && CPU.AVX512:
		expRowsF32AVX512(unsafe.SliceData(s), ld, rows, &body[0], &shift[0], &sums[0])
	case asm:
		expRowsF32(unsafe.SliceData(s), ld, rows, &body[0], &shift[0], &sums[0])
	}
	for r := range rows {
		row := s[r*ld : r*ld+lens[r]]
		if !asm {
			var a [8]float64
			for i := range body[r] {
				row[i] = exp32(row[i] - shift[r])
				a[i&7] += float64(row[i])
			}
			sums[r] = ((a[0] + a[4]) + (a[2] + a[6])) + ((a[1] + a[5]) + (a[3] + a[7]))
		}
		for i := body[r]; i < len(row); i++ {
			row[i] = exp32(row[i] - shift[r])
			sums[r] += float64(row[i])
		}
	}
}

// dsRows sets dp = p∘(dp − delta[r]) over the first n elements of each of
// rows rows (ld apart) of dp and p.
func dsRows(dp, p []float32, ld, rows, n int, delta []float32) {
	var lens [rowsMax]int
	for r := range rows {
		lens[r] = n
	}
	checkRows(len(dp), ld, rows, lens[:], len(delta))
	checkRows(len(p), ld, rows, lens[:])
	k := 0
	if CPU.AVX2FMA && rows > 0 {
		k = n &^ 7
		dsRowsF32(unsafe.SliceData(dp), unsafe.SliceData(p), ld, rows, k, &delta[0])
	}
	for r := range rows {
		dl := delta[r]
		for x := r*ld + k; x < r*ld+n; x++ {
			dp[x] = p[x] * (dp[x] - dl)
		}
	}
}

// claimFor calls f over [0, n) in pieces of grain items (the last one
// shorter) that the workers claim from a shared counter, so that a worker
// whose core is busy elsewhere simply takes fewer pieces.
func claimFor(n, grain int, f func(lo, hi int)) {
	pieces := (n + grain - 1) / grain
	if pieces <= 1 {
		f(0, n)
		return
	}
	var next atomic.Int64
	ParallelFor(min(Workers(), pieces), 1, func(_, _ int) {
		for {
			p := int(next.Add(1) - 1)
			if p >= pieces {
				return
			}
			f(p*grain, min((p+1)*grain, n))
		}
	})
}
