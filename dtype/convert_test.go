package dtype

import (
	"math"
	"math/rand/v2"
	"testing"
)

// fromF64Half converts xs to d (F16 or BF16) through the public FromF64
// and returns the bit patterns.
func fromF64Half(d DType, xs ...float64) []uint16 {
	dst := make([]byte, 2*len(xs))
	FromF64(d, dst, xs)
	return AsU16(dst)
}

// randomF64 returns a float64 with random sign and 52-bit fraction and an
// exponent uniform in [minExp, maxExp]; one in eight has fully random
// bits, NaN excluded.
func randomF64(r *rand.Rand, minExp, maxExp int) float64 {
	if r.IntN(8) == 0 {
		for {
			x := math.Float64frombits(r.Uint64())
			if x == x {
				return x
			}
		}
	}
	e := minExp + r.IntN(maxExp-minExp+1)
	bits := r.Uint64()&(1<<63|1<<52-1) | uint64(e+1023)<<52
	return math.Float64frombits(bits)
}

// TestFromF64HalfRandom compares FromF64 for F16 and BF16 with the
// nearest-search reference on seeded random float64 values.
func TestFromF64HalfRandom(t *testing.T) {
	formats := []struct {
		d              DType
		ref            *refFormat
		minExp, maxExp int
	}{
		{F16, refF16, -27, 17},
		{BF16, refBF16, -135, 129},
	}
	r := rand.New(rand.NewPCG(64, 3))
	const n = 200_000
	for _, f := range formats {
		xs := make([]float64, n)
		for i := range xs {
			xs[i] = randomF64(r, f.minExp, f.maxExp)
		}
		got := fromF64Half(f.d, xs...)
		bad := 0
		for i, x := range xs {
			if want := f.ref.nearest(x); got[i] != want {
				if bad++; bad <= 10 {
					t.Errorf("FromF64(%v, %g [%#016x]) = %#04x, want %#04x",
						f.d, x, math.Float64bits(x), got[i], want)
				}
			}
		}
		t.Logf("%v: %d random float64 values, %d mismatches", f.d, n, bad)
	}
}

// TestFromF64HalfMidpoints checks, for every pair of adjacent finite
// values, that the midpoint goes to the even neighbour and that the
// float64 values just either side of it go to the nearer one. Those
// neighbours of the midpoint round to the midpoint itself in float32, so
// this catches any double rounding through float32.
func TestFromF64HalfMidpoints(t *testing.T) {
	for _, f := range []struct {
		d   DType
		ref *refFormat
	}{{F16, refF16}, {BF16, refBF16}} {
		var xs []float64
		var want []uint16
		for _, s := range []uint16{0, f.ref.sign()} {
			for p := uint16(0); p < f.ref.maxFin(); p++ {
				lo, hi := s|p, s|(p+1)
				mid := (f.ref.decode(lo) + f.ref.decode(hi)) / 2
				even := lo
				if lo&1 != 0 {
					even = hi
				}
				away := math.Copysign(math.Inf(1), mid)
				xs = append(xs, mid, math.Nextafter(mid, away), math.Nextafter(mid, 0))
				want = append(want, even, hi, lo)
			}
		}
		got := fromF64Half(f.d, xs...)
		bad := 0
		for i := range xs {
			if got[i] != want[i] {
				if bad++; bad <= 10 {
					t.Errorf("FromF64(%v, %.17g) = %#04x, want %#04x", f.d, xs[i], got[i], want[i])
				}
			}
		}
		t.Logf("%v: %d values around midpoints, %d mismatches", f.d, len(xs), bad)
	}
}

// TestFromF64DoubleRounding shows one value where rounding via float32
// gives a different (wrong) answer from rounding once, for each format.
func TestFromF64DoubleRounding(t *testing.T) {
	cases := []struct {
		d        DType
		x        float64
		direct   uint16
		viaF32   uint16
		viaF32Fn func(float32) uint16
	}{
		// 1 + 2^-11 is halfway between halves 1 and 1+2^-10; the extra
		// 2^-30 puts x above it but is lost when x is rounded to float32.
		{F16, 1 + math.Pow(2, -11) + math.Pow(2, -30), 0x3c01, 0x3c00, F16FromF32},
		{BF16, 1 + math.Pow(2, -8) + math.Pow(2, -30), 0x3f81, 0x3f80, BF16FromF32},
		{F16, -(1 + math.Pow(2, -11) + math.Pow(2, -30)), 0xbc01, 0xbc00, F16FromF32},
	}
	for _, c := range cases {
		got := fromF64Half(c.d, c.x)[0]
		via := c.viaF32Fn(float32(c.x))
		if got != c.direct {
			t.Errorf("FromF64(%v, %.17g) = %#04x, want %#04x", c.d, c.x, got, c.direct)
		}
		if via != c.viaF32 {
			t.Errorf("test premise: via float32 %.17g gives %#04x, expected %#04x", c.x, via, c.viaF32)
		}
		t.Logf("%v %.17g: direct %#04x, via float32 %#04x", c.d, c.x, got, via)
	}
}

// TestFromF64HalfSpecials covers Inf, NaN, zeros and the far ends of the
// float64 range for FromF64 into F16 and BF16.
func TestFromF64HalfSpecials(t *testing.T) {
	cases := []struct {
		d    DType
		x    float64
		want uint16
	}{
		{F16, math.Inf(1), 0x7c00},
		{F16, math.Inf(-1), 0xfc00},
		{F16, math.MaxFloat64, 0x7c00},
		{F16, math.SmallestNonzeroFloat64, 0x0000},
		{F16, -math.SmallestNonzeroFloat64, 0x8000},
		{F16, math.Copysign(0, -1), 0x8000},
		{F16, 65519.99999999999, 0x7bff},
		{F16, 65520, 0x7c00},
		{BF16, math.Inf(-1), 0xff80},
		{BF16, 1e300, 0x7f80},
		{BF16, -1e-300, 0x8000},
		{BF16, math.MaxFloat32, 0x7f80},
	}
	for _, c := range cases {
		if got := fromF64Half(c.d, c.x)[0]; got != c.want {
			t.Errorf("FromF64(%v, %g) = %#04x, want %#04x", c.d, c.x, got, c.want)
		}
	}
	for _, bits := range []uint64{0x7ff0000000000001, 0xffffffffffffffff, 0x7ff8000000000000} {
		x := math.Float64frombits(bits)
		neg := bits>>63 != 0
		if got := fromF64Half(F16, x)[0]; !refF16.isNaN(got) || (got&0x8000 != 0) != neg {
			t.Errorf("FromF64(f16, NaN %#016x) = %#04x, want NaN with the same sign", bits, got)
		}
		if got := fromF64Half(BF16, x)[0]; !refBF16.isNaN(got) || (got&0x8000 != 0) != neg {
			t.Errorf("FromF64(bf16, NaN %#016x) = %#04x, want NaN with the same sign", bits, got)
		}
	}
}

// intAt reads element i of int storage of type d as an int64.
func intAt(d DType, b []byte, i int) int64 {
	switch d {
	case I8:
		return int64(AsI8(b)[i])
	case I32:
		return int64(AsI32(b)[i])
	}
	return AsI64(b)[i]
}

// TestFloatToInt checks truncation toward zero, saturation and NaN -> 0
// for FromF32 and FromF64.
func TestFloatToInt(t *testing.T) {
	inf, nan := math.Inf(1), math.NaN()
	cases := []struct {
		d    DType
		x    float64
		want int64
	}{
		{I8, 300.7, 127},
		{I8, -300.7, -128},
		{I8, 127.9, 127},
		{I8, -128.9, -128},
		{I8, 2.9, 2},
		{I8, -2.9, -2},
		{I8, -0.5, 0},
		{I8, nan, 0},
		{I8, inf, 127},
		{I8, -inf, -128},
		{I32, 3e9, math.MaxInt32},
		{I32, -3e9, math.MinInt32},
		{I32, 2147483648, math.MaxInt32},
		{I32, -2147483648, math.MinInt32},
		{I32, 2147483520, 2147483520},
		{I32, -1234.99, -1234},
		{I32, nan, 0},
		{I32, -inf, math.MinInt32},
		{I64, -1e20, math.MinInt64},
		{I64, 1e20, math.MaxInt64},
		{I64, 9223372036854775807, math.MaxInt64}, // is 2^63 as a float
		{I64, -9223372036854775808, math.MinInt64},
		{I64, 9223371487098961920, 9223371487098961920}, // largest float32 below 2^63
		{I64, 1 << 40, 1 << 40},
		{I64, -7.75, -7},
		{I64, nan, 0},
		{I64, inf, math.MaxInt64},
	}
	for _, c := range cases {
		b := make([]byte, c.d.Size())
		FromF64(c.d, b, []float64{c.x})
		if got := intAt(c.d, b, 0); got != c.want {
			t.Errorf("FromF64(%v, %g) = %d, want %d", c.d, c.x, got, c.want)
		}
		x32 := float32(c.x)
		if float64(x32) != c.x && !math.IsNaN(c.x) {
			continue // not a float32 value; FromF32 is checked on exact inputs only
		}
		FromF32(c.d, b, []float32{x32})
		if got := intAt(c.d, b, 0); got != c.want {
			t.Errorf("FromF32(%v, %g) = %d, want %d", c.d, x32, got, c.want)
		}
	}
}

// TestIntExactness checks that every I32 value in [-2^24, 2^24] converts
// to float32 and back unchanged, that every I8 value does, and that the
// first integer float32 cannot hold rounds to even.
func TestIntExactness(t *testing.T) {
	const lim = 1 << 24
	const chunk = 1 << 20
	ints := make([]int32, chunk)
	floats := make([]float32, chunk)
	back := make([]byte, 4*chunk)
	bad := 0
	for start := -lim; start <= lim; start += chunk {
		n := min(chunk, lim+1-start)
		for i := range n {
			ints[i] = int32(start + i)
		}
		ToF32(floats[:n], I32, Bytes(ints[:n]))
		FromF32(I32, back[:4*n], floats[:n])
		out := AsI32(back[:4*n])
		for i := range n {
			if float64(floats[i]) != float64(ints[i]) || out[i] != ints[i] {
				if bad++; bad <= 10 {
					t.Errorf("I32 %d -> %g -> %d", ints[i], floats[i], out[i])
				}
			}
		}
	}
	t.Logf("I32 in [-2^24, 2^24]: %d mismatches", bad)

	i8 := make([]int8, 256)
	for i := range i8 {
		i8[i] = int8(i - 128)
	}
	f8 := make([]float32, 256)
	ToF32(f8, I8, Bytes(i8))
	b8 := make([]byte, 256)
	FromF32(I8, b8, f8)
	for i, v := range AsI8(b8) {
		if float64(f8[i]) != float64(i8[i]) || v != i8[i] {
			t.Errorf("I8 %d -> %g -> %d", i8[i], f8[i], v)
		}
	}

	beyond := []int32{lim + 1, lim + 3, -(lim + 1)}
	want := []float32{lim, lim + 4, -lim}
	got := make([]float32, len(beyond))
	ToF32(got, I32, Bytes(beyond))
	for i := range got {
		if got[i] != want[i] {
			t.Errorf("ToF32(I32 %d) = %.1f, want %.1f", beyond[i], got[i], want[i])
		}
	}
}

// TestLargeI64ToFloat checks I64 -> F32 and I64 -> F64 on large values
// against a reference that rounds with integer arithmetic only: the
// result must be the nearest float, ties to even.
func TestLargeI64ToFloat(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 7))
	vals := []int64{math.MaxInt64, math.MinInt64, 1<<53 + 1, 1<<53 + 3, 1<<24 + 1, -(1<<24 + 3)}
	for range 10_000 {
		vals = append(vals, int64(r.Uint64())>>r.IntN(40))
	}
	f32 := make([]float32, len(vals))
	f64 := make([]float64, len(vals))
	ToF32(f32, I64, Bytes(vals))
	ToF64(f64, I64, Bytes(vals))
	for i, v := range vals {
		if want := nearestIntFloat(v, 24); float64(f32[i]) != want {
			t.Errorf("ToF32(I64 %d) = %.0f, want %.0f", v, f32[i], want)
		}
		if want := nearestIntFloat(v, 53); f64[i] != want {
			t.Errorf("ToF64(I64 %d) = %.0f, want %.0f", v, f64[i], want)
		}
	}
}

// nearestIntFloat rounds v to prec significant bits, ties to even, using
// only integer arithmetic, and returns the result as a float64 (exact for
// prec <= 53).
func nearestIntFloat(v int64, prec int) float64 {
	neg := v < 0
	u := uint64(v)
	if neg {
		u = -u // also right for MinInt64
	}
	shift := 0
	for u>>shift >= 1<<prec {
		shift++
	}
	if shift > 0 {
		q, rem, half := u>>shift, u&(1<<shift-1), uint64(1)<<(shift-1)
		if rem > half || (rem == half && q&1 == 1) {
			q++
		}
		f := math.Ldexp(float64(q), shift)
		if neg {
			return -f
		}
		return f
	}
	if neg {
		return -float64(u)
	}
	return float64(u)
}
