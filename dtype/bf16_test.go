package dtype

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestBF16ToF32Exhaustive decodes all 65,536 bfloat16 patterns and
// compares with the float64 reference decoder.
func TestBF16ToF32Exhaustive(t *testing.T) {
	bad := 0
	for i := range 1 << 16 {
		b := uint16(i)
		got := BF16ToF32(b)
		want := refBF16.decode(b)
		if !sameFloat(float64(got), want) {
			if bad++; bad <= 10 {
				t.Errorf("BF16ToF32(%#04x) = %g, want %g", b, got, want)
			}
		}
		if bits := math.Float32bits(got); bits != uint32(b)<<16 {
			t.Errorf("BF16ToF32(%#04x) bits = %#08x, want %#08x", b, bits, uint32(b)<<16)
		}
	}
	t.Logf("checked 65536 patterns, %d mismatches", bad)
}

// TestBF16RoundTrip checks BF16FromF32(BF16ToF32(b)) == b for every
// non-NaN pattern; NaNs come back as NaN with the quiet bit set.
func TestBF16RoundTrip(t *testing.T) {
	nans, bad := 0, 0
	for i := range 1 << 16 {
		b := uint16(i)
		got := BF16FromF32(BF16ToF32(b))
		want := b
		if refBF16.isNaN(b) {
			nans++
			want = b | 0x0040
		}
		if got != want {
			if bad++; bad <= 10 {
				t.Errorf("round trip %#04x -> %g -> %#04x, want %#04x", b, BF16ToF32(b), got, want)
			}
		}
	}
	t.Logf("round-tripped 65536 patterns (%d NaN), %d mismatches", nans, bad)
}

// TestBF16Midpoints checks ties to even and both sides of every midpoint
// between adjacent finite bfloat16 values of both signs.
func TestBF16Midpoints(t *testing.T) {
	checkMidpoints(t, refBF16, BF16FromF32)
}

// TestBF16Edges covers overflow, Inf, and NaN patterns whose top 16 bits
// alone would read as Inf or whose rounding would carry out of the
// exponent.
func TestBF16Edges(t *testing.T) {
	maxBF := refBF16.decode(0x7f7f)
	overflow := float32(maxBF + math.Pow(2, 119)) // max plus half a step
	cases := []struct {
		name string
		x    float32
		want uint16
	}{
		{"largest finite", float32(maxBF), 0x7f7f},
		{"max + half ulp", overflow, 0x7f80},
		{"-(max + half ulp)", -overflow, 0xff80},
		{"just below max + half ulp", math.Nextafter32(overflow, 0), 0x7f7f},
		{"max float32", math.MaxFloat32, 0x7f80},
		{"+Inf", float32(math.Inf(1)), 0x7f80},
		{"-Inf", float32(math.Inf(-1)), 0xff80},
		{"-0", float32(math.Copysign(0, -1)), 0x8000},
		{"smallest float32 subnormal", math.SmallestNonzeroFloat32, 0x0000},
		{"-smallest float32 subnormal", -math.SmallestNonzeroFloat32, 0x8000},
		{"1", 1, 0x3f80},
		{"1 + 2^-8 (tie, to even)", 1 + 1.0/256, 0x3f80},
		{"1 + 3*2^-8 (tie, to even)", 1 + 3.0/256, 0x3f82},
		{"pi", math.Pi, 0x4049},
	}
	for _, c := range cases {
		if got := BF16FromF32(c.x); got != c.want {
			t.Errorf("BF16FromF32(%s = %g) = %#04x, want %#04x", c.name, c.x, got, c.want)
		}
	}
	nans := []uint32{
		0x7f800001, 0xffffffff, 0x7fffffff, 0xff800001, 0x7fc00000,
		0x7f80ffff, 0x7fff8000, 0x7f808000, 0xff807fff,
	}
	for _, bits := range nans {
		got := BF16FromF32(math.Float32frombits(bits))
		if !refBF16.isNaN(got) || got&0x8000 != uint16(bits>>16)&0x8000 {
			t.Errorf("BF16FromF32(NaN %#08x) = %#04x (%g), want a NaN with the same sign",
				bits, got, BF16ToF32(got))
		}
	}
}

// TestBF16Random compares BF16FromF32 with the nearest-search reference
// on a million seeded random float32 values over every exponent, float32
// subnormals included.
func TestBF16Random(t *testing.T) {
	r := rand.New(rand.NewPCG(32, 2))
	const n = 1_000_000
	bad := 0
	for range n {
		x := randomF32(r, -127, 127)
		if got, want := BF16FromF32(x), refBF16.nearest(float64(x)); got != want {
			if bad++; bad <= 10 {
				t.Errorf("BF16FromF32(%g [%#08x]) = %#04x, want %#04x", x, math.Float32bits(x), got, want)
			}
		}
	}
	t.Logf("%d random float32 values, %d mismatches", n, bad)
}
