package kernels

import (
	"flag"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/headroom-ml/headroom/dtype"
)

// TestWidenExhaustive converts every one of the 65,536 16-bit patterns to
// float32 as binary16 and as bfloat16 and compares the bits with dtype's
// scalar functions.
func TestWidenExhaustive(t *testing.T) {
	src := make([]uint16, 1<<16)
	for i := range src {
		src[i] = uint16(i)
	}
	got := make([]float32, len(src))
	F16ToF32(got, src)
	for i, h := range src {
		if g, w := math.Float32bits(got[i]), math.Float32bits(dtype.F16ToF32(h)); g != w {
			t.Fatalf("F16ToF32(%#04x) = %#08x, want %#08x", h, g, w)
		}
	}
	BF16ToF32(got, src)
	for i, h := range src {
		if g, w := math.Float32bits(got[i]), math.Float32bits(dtype.BF16ToF32(h)); g != w {
			t.Fatalf("BF16ToF32(%#04x) = %#08x, want %#08x", h, g, w)
		}
	}
	t.Logf("path %s: all %d patterns exact both ways", CPU.Path(), len(src))
}

// narrowCases returns float32 bit patterns that cover every class and every
// rounding decision of both narrowing conversions:
//   - every 16-bit upper half (bfloat16 results, NaN and Inf included) with
//     the lower half at 0, 1, just below, at and just above the tie, and max;
//   - every 19-bit prefix that fixes a binary16 result in the normal range
//     (and Inf/NaN) with the 13 dropped bits at the same points;
//   - for every exponent that gives a binary16 subnormal or underflows, ties
//     and near-ties at the exact rounding position, over random fractions;
//   - a sweep of all 2^32 patterns with a prime stride, and random patterns.
//
// TestNarrowAllPatterns (flag -convert.all) checks every pattern.
func narrowCases() []uint32 {
	var xs []uint32
	for hi := range uint32(1 << 16) {
		for _, lo := range []uint32{0, 1, 0x7fff, 0x8000, 0x8001, 0xffff} {
			xs = append(xs, hi<<16|lo)
		}
	}
	for hi := range uint32(1 << 19) {
		for _, lo := range []uint32{0, 0xfff, 0x1000, 0x1001, 0x1fff} {
			xs = append(xs, hi<<13|lo)
		}
	}
	r := rand.New(rand.NewPCG(7, 11))
	for e := uint32(95); e <= 113; e++ { // 2^-32 .. 2^-14
		for shift := uint(1); shift <= 24; shift++ {
			half := uint32(1) << (shift - 1)
			for range 64 {
				frac := r.Uint32() & 0x7fffff &^ (1<<shift - 1)
				for _, rem := range []uint32{0, 1, half - 1, half, half + 1, 1<<shift - 1} {
					f := (frac | rem&(1<<shift-1)) & 0x7fffff
					xs = append(xs, e<<23|f, 1<<31|e<<23|f)
				}
			}
		}
	}
	for x := uint64(0); x < 1<<32; x += 4093 {
		xs = append(xs, uint32(x))
	}
	for range 1 << 18 {
		xs = append(xs, r.Uint32())
	}
	return xs
}

// TestNarrowMatchesScalar rounds several million float32 patterns of every
// class to binary16 and bfloat16 and compares with dtype's scalar rounding.
func TestNarrowMatchesScalar(t *testing.T) {
	bits := narrowCases()
	src := make([]float32, len(bits))
	for i, b := range bits {
		src[i] = math.Float32frombits(b)
	}
	got := make([]uint16, len(src))
	F32ToF16(got, src)
	for i, b := range bits {
		if w := dtype.F16FromF32(src[i]); got[i] != w {
			t.Fatalf("F32ToF16(%#08x) = %#04x, want %#04x", b, got[i], w)
		}
	}
	F32ToBF16(got, src)
	for i, b := range bits {
		if w := dtype.BF16FromF32(src[i]); got[i] != w {
			t.Fatalf("F32ToBF16(%#08x) = %#04x, want %#04x", b, got[i], w)
		}
	}
	t.Logf("path %s: %d float32 patterns exact both ways", CPU.Path(), len(bits))
}

// TestConvertLengthsAndOffsets runs every conversion over all lengths up to
// 100 at every start offset 0..3, so that the vector loops, their tails
// and unaligned addresses all run, and checks that nothing outside
// dst[:n] is written.
func TestConvertLengthsAndOffsets(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	const size = 104
	f := make([]float32, size)
	h := make([]uint16, size)
	for i := range f {
		f[i] = float32(r.NormFloat64() * 100)
		h[i] = uint16(r.Uint32())
	}
	const guard = 0x5a5a
	for off := range 4 {
		for n := 0; off+n <= size-1; n++ {
			src32, src16 := f[off:off+n], h[off:off+n]
			d16 := make([]uint16, n+1)
			d32 := make([]float32, n+1)

			d16[n] = guard
			F32ToF16(d16[:n], src32)
			for i := range n {
				if w := dtype.F16FromF32(src32[i]); d16[i] != w {
					t.Fatalf("off %d n %d: F32ToF16[%d] = %#04x, want %#04x", off, n, i, d16[i], w)
				}
			}
			F32ToBF16(d16[:n], src32)
			for i := range n {
				if w := dtype.BF16FromF32(src32[i]); d16[i] != w {
					t.Fatalf("off %d n %d: F32ToBF16[%d] = %#04x, want %#04x", off, n, i, d16[i], w)
				}
			}
			if d16[n] != guard {
				t.Fatalf("off %d n %d: narrowing wrote past the end", off, n)
			}

			d32[n] = 42
			F16ToF32(d32[:n], src16)
			for i := range n {
				if g, w := math.Float32bits(d32[i]), math.Float32bits(dtype.F16ToF32(src16[i])); g != w {
					t.Fatalf("off %d n %d: F16ToF32[%d] = %#08x, want %#08x", off, n, i, g, w)
				}
			}
			BF16ToF32(d32[:n], src16)
			for i := range n {
				if g, w := math.Float32bits(d32[i]), math.Float32bits(dtype.BF16ToF32(src16[i])); g != w {
					t.Fatalf("off %d n %d: BF16ToF32[%d] = %#08x, want %#08x", off, n, i, g, w)
				}
			}
			if d32[n] != 42 {
				t.Fatalf("off %d n %d: widening wrote past the end", off, n)
			}
		}
	}
}

// TestConvertLengthMismatchPanics checks the length check.
func TestConvertLengthMismatchPanics(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Fatal("F32ToF16 with len(dst) != len(src) did not panic")
		}
	}()
	F32ToF16(make([]uint16, 3), make([]float32, 4))
}

var allBits = flag.Bool("convert.all", false, "check the narrowing conversions on all 2^32 float32 patterns (about a minute)")

// TestNarrowAllPatterns checks both narrowing conversions on every float32
// bit pattern when run with -convert.all.
func TestNarrowAllPatterns(t *testing.T) {
	if !*allBits {
		t.Skip("run with -convert.all to check all 2^32 patterns")
	}
	const chunk = 1 << 22
	src := make([]float32, chunk)
	h := make([]uint16, chunk)
	b := make([]uint16, chunk)
	for base := uint64(0); base < 1<<32; base += chunk {
		for i := range src {
			src[i] = math.Float32frombits(uint32(base) + uint32(i))
		}
		F32ToF16(h, src)
		F32ToBF16(b, src)
		for i, v := range src {
			if w := dtype.F16FromF32(v); h[i] != w {
				t.Fatalf("F32ToF16(%#08x) = %#04x, want %#04x", math.Float32bits(v), h[i], w)
			}
			if w := dtype.BF16FromF32(v); b[i] != w {
				t.Fatalf("F32ToBF16(%#08x) = %#04x, want %#04x", math.Float32bits(v), b[i], w)
			}
		}
	}
	t.Logf("path %s: all 2^32 float32 patterns exact both ways", CPU.Path())
}
