package dtype

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestF16ToF32Exhaustive decodes all 65,536 half patterns and compares
// with the float64 reference decoder, including signed zeros, subnormals,
// infinities and NaN payloads.
func TestF16ToF32Exhaustive(t *testing.T) {
	bad := 0
	for i := range 1 << 16 {
		h := uint16(i)
		got := F16ToF32(h)
		want := refF16.decode(h)
		if !sameFloat(float64(got), want) {
			if bad++; bad <= 10 {
				t.Errorf("F16ToF32(%#04x) = %g, want %g", h, got, want)
			}
			continue
		}
		if refF16.isNaN(h) {
			bits := math.Float32bits(got)
			if uint16(bits>>16)&0x8000 != h&0x8000 || uint16(bits>>13)&0x3ff != h&0x3ff {
				t.Errorf("F16ToF32(%#04x) = NaN bits %#08x, want sign and payload kept", h, bits)
			}
		}
	}
	t.Logf("checked 65536 patterns, %d mismatches", bad)
}

// TestF16RoundTrip checks F16FromF32(F16ToF32(h)) == h for every non-NaN
// pattern, and that NaN stays NaN with its sign and payload, quiet bit set.
func TestF16RoundTrip(t *testing.T) {
	nans, bad := 0, 0
	for i := range 1 << 16 {
		h := uint16(i)
		got := F16FromF32(F16ToF32(h))
		want := h
		if refF16.isNaN(h) {
			nans++
			want = h | 0x0200
		}
		if got != want {
			if bad++; bad <= 10 {
				t.Errorf("round trip %#04x -> %g -> %#04x, want %#04x", h, F16ToF32(h), got, want)
			}
		}
	}
	t.Logf("round-tripped 65536 patterns (%d NaN), %d mismatches", nans, bad)
}

// TestF16Midpoints checks every pair of adjacent finite halves of both
// signs: the exact midpoint rounds to the even neighbour and the float32
// values just either side of it round to the nearer neighbour.
func TestF16Midpoints(t *testing.T) {
	checkMidpoints(t, refF16, F16FromF32)
}

// checkMidpoints runs the midpoint test for a format, using conv to round
// float32 values into it.
func checkMidpoints(t *testing.T, f *refFormat, conv func(float32) uint16) {
	t.Helper()
	pairs, bad := 0, 0
	for _, s := range []uint16{0, f.sign()} {
		for p := uint16(0); p < f.maxFin(); p++ {
			lo, hi := s|p, s|(p+1)
			mid := (f.decode(lo) + f.decode(hi)) / 2
			m32 := float32(mid)
			if float64(m32) != mid {
				t.Fatalf("%s midpoint of %#04x,%#04x = %g is not a float32", f.name, lo, hi, mid)
			}
			even := lo
			if lo&1 != 0 {
				even = hi
			}
			away := float32(math.Copysign(math.Inf(1), mid))
			toward := float32(math.Copysign(0, mid))
			cases := []struct {
				x    float32
				want uint16
			}{
				{m32, even},
				{math.Nextafter32(m32, away), hi},
				{math.Nextafter32(m32, toward), lo},
			}
			for _, c := range cases {
				if got := conv(c.x); got != c.want {
					if bad++; bad <= 10 {
						t.Errorf("%s: %g (between %#04x and %#04x) -> %#04x, want %#04x",
							f.name, c.x, lo, hi, got, c.want)
					}
				}
			}
			pairs++
		}
	}
	t.Logf("%s: %d adjacent pairs, %d mismatches", f.name, pairs, bad)
}

// TestF16Edges covers overflow to Inf, underflow to zero, Inf and NaN.
func TestF16Edges(t *testing.T) {
	maxHalf := float32(65504)
	overflow := float32(65504 + 16) // largest finite plus half a step
	tiny := float32(math.Pow(2, -25))
	cases := []struct {
		name string
		x    float32
		want uint16
	}{
		{"largest finite", maxHalf, 0x7bff},
		{"max + half ulp", overflow, 0x7c00},
		{"-(max + half ulp)", -overflow, 0xfc00},
		{"just below max + half ulp", math.Nextafter32(overflow, 0), 0x7bff},
		{"1e9", 1e9, 0x7c00},
		{"max float32", math.MaxFloat32, 0x7c00},
		{"+Inf", float32(math.Inf(1)), 0x7c00},
		{"-Inf", float32(math.Inf(-1)), 0xfc00},
		{"half smallest subnormal", tiny, 0x0000},
		{"-half smallest subnormal", -tiny, 0x8000},
		{"just above half smallest subnormal", math.Nextafter32(tiny, 1), 0x0001},
		{"just below half smallest subnormal", math.Nextafter32(tiny, 0), 0x0000},
		{"-1e-10", -1e-10, 0x8000},
		{"smallest float32 subnormal", math.SmallestNonzeroFloat32, 0x0000},
		{"-0", float32(math.Copysign(0, -1)), 0x8000},
		{"smallest subnormal", float32(math.Pow(2, -24)), 0x0001},
		{"largest subnormal", float32(math.Pow(2, -14) - math.Pow(2, -24)), 0x03ff},
		{"smallest normal", float32(math.Pow(2, -14)), 0x0400},
		{"1", 1, 0x3c00},
		{"-2", -2, 0xc000},
		{"1/3", 1.0 / 3, 0x3555},
	}
	for _, c := range cases {
		if got := F16FromF32(c.x); got != c.want {
			t.Errorf("F16FromF32(%s = %g) = %#04x, want %#04x", c.name, c.x, got, c.want)
		}
	}
	for _, bits := range []uint32{0x7f800001, 0xffffffff, 0x7fc00000, 0xff802000, 0x7fffe000} {
		got := F16FromF32(math.Float32frombits(bits))
		if !refF16.isNaN(got) || got&0x8000 != uint16(bits>>16)&0x8000 || got&0x0200 == 0 {
			t.Errorf("F16FromF32(NaN %#08x) = %#04x, want a quiet NaN with the same sign", bits, got)
		}
	}
}

// randomF32 returns a float32 with uniformly random sign, fraction and an
// exponent drawn uniformly from [minExp, maxExp] (unbiased); about one in
// eight values instead has fully random bits, NaN excluded.
func randomF32(r *rand.Rand, minExp, maxExp int) float32 {
	if r.IntN(8) == 0 {
		for {
			f := math.Float32frombits(r.Uint32())
			if f == f {
				return f
			}
		}
	}
	e := minExp + r.IntN(maxExp-minExp+1)
	bits := r.Uint32()&0x807fffff | uint32(e+127)<<23
	return math.Float32frombits(bits)
}

// TestF16Random compares F16FromF32 with the nearest-search reference on
// a million seeded random float32 values spanning the exponents where
// halves round interestingly (subnormal underflow to overflow) and beyond.
func TestF16Random(t *testing.T) {
	r := rand.New(rand.NewPCG(16, 1))
	const n = 1_000_000
	bad := 0
	for range n {
		x := randomF32(r, -27, 17)
		if got, want := F16FromF32(x), refF16.nearest(float64(x)); got != want {
			if bad++; bad <= 10 {
				t.Errorf("F16FromF32(%g [%#08x]) = %#04x, want %#04x", x, math.Float32bits(x), got, want)
			}
		}
	}
	t.Logf("%d random float32 values, %d mismatches", n, bad)
}
