package dtype

import (
	"encoding/binary"
	"math"
	"math/rand/v2"
	"testing"
)

// randomF32s returns n seeded random float32 values over all exponents,
// with a sprinkling of NaN, Inf and zeros.
func randomF32s(seed uint64, n int) []float32 {
	r := rand.New(rand.NewPCG(seed, 99))
	xs := make([]float32, n)
	specials := []float32{float32(math.NaN()), float32(math.Inf(1)), float32(math.Inf(-1)), 0, float32(math.Copysign(0, -1))}
	for i := range xs {
		if r.IntN(50) == 0 {
			xs[i] = specials[r.IntN(len(specials))]
			continue
		}
		xs[i] = math.Float32frombits(r.Uint32())
		if r.IntN(2) == 0 {
			xs[i] = randomF32(r, -26, 16)
		}
	}
	return xs
}

// TestBulkMatchesScalar checks the four slice conversions element by
// element against the scalar functions on seeded random data.
func TestBulkMatchesScalar(t *testing.T) {
	const n = 10_000
	xs := randomF32s(1, n)
	r := rand.New(rand.NewPCG(2, 2))
	hs := make([]uint16, n)
	for i := range hs {
		hs[i] = uint16(r.Uint32())
	}

	h := make([]uint16, n)
	F32ToF16(h, xs)
	b := make([]uint16, n)
	F32ToBF16(b, xs)
	f := make([]float32, n)
	F16ToF32s(f, hs)
	g := make([]float32, n)
	BF16ToF32s(g, hs)
	for i := range n {
		if want := F16FromF32(xs[i]); h[i] != want {
			t.Fatalf("F32ToF16[%d] = %#04x, want %#04x", i, h[i], want)
		}
		if want := BF16FromF32(xs[i]); b[i] != want {
			t.Fatalf("F32ToBF16[%d] = %#04x, want %#04x", i, b[i], want)
		}
		if want := F16ToF32(hs[i]); math.Float32bits(f[i]) != math.Float32bits(want) {
			t.Fatalf("F16ToF32s[%d] = %g, want %g", i, f[i], want)
		}
		if want := BF16ToF32(hs[i]); math.Float32bits(g[i]) != math.Float32bits(want) {
			t.Fatalf("BF16ToF32s[%d] = %g, want %g", i, g[i], want)
		}
	}
	t.Logf("%d elements through each bulk function", n)
}

// TestStorageConversions runs ToF32/FromF32/ToF64/FromF64 for every dtype
// on random data and checks each element against the scalar rule, on
// aligned and deliberately misaligned byte slices.
func TestStorageConversions(t *testing.T) {
	const n = 4096
	xs := randomF32s(3, n)
	for i := range xs {
		if i%3 == 0 { // some values in integer range too
			xs[i] = float32(int(xs[i])%1000) + 0.25
		}
	}
	x64 := make([]float64, n)
	for i, v := range xs {
		x64[i] = float64(v) * (1 + 1e-12) // bits beyond float32
	}
	for _, d := range All() {
		for _, offset := range []int{0, 1} {
			buf := make([]byte, n*d.Size()+8)[offset : offset+n*d.Size()]
			FromF32(d, buf, xs)
			back := make([]float32, n)
			ToF32(back, d, buf)
			for i, v := range xs {
				want := expectFromF32(d, v)
				if got := back[i]; math.Float32bits(got) != math.Float32bits(want) &&
					!(math.IsNaN(float64(got)) && math.IsNaN(float64(want))) {
					t.Fatalf("%v offset %d: FromF32/ToF32 of %g = %g, want %g", d, offset, v, got, want)
				}
			}
			FromF64(d, buf, x64)
			back64 := make([]float64, n)
			ToF64(back64, d, buf)
			for i, v := range x64 {
				if got, want := back64[i], expectFromF64(d, v); !sameFloat(got, want) {
					t.Fatalf("%v offset %d: FromF64/ToF64 of %g = %g, want %g", d, offset, v, got, want)
				}
			}
		}
	}
}

// expectFromF32 is what FromF32 then ToF32 should give for x in dtype d.
func expectFromF32(d DType, x float32) float32 {
	switch d {
	case F64, F32:
		return x
	case F16:
		return F16ToF32(F16FromF32(x))
	case BF16:
		return BF16ToF32(BF16FromF32(x))
	}
	return float32(expectInt(d, float64(x)))
}

// expectFromF64 is what FromF64 then ToF64 should give for x in dtype d.
func expectFromF64(d DType, x float64) float64 {
	if math.IsNaN(x) && d.IsFloat() {
		return x
	}
	switch d {
	case F64:
		return x
	case F32:
		return float64(float32(x))
	case F16:
		return refF16.decode(refF16.nearest(x))
	case BF16:
		return refBF16.decode(refBF16.nearest(x))
	}
	return float64(expectInt(d, x))
}

// expectInt truncates and saturates x for an integer dtype, using
// math.Trunc and explicit bounds.
func expectInt(d DType, x float64) int64 {
	if math.IsNaN(x) {
		return 0
	}
	var lo, hi int64
	switch d {
	case I8:
		lo, hi = math.MinInt8, math.MaxInt8
	case I32:
		lo, hi = math.MinInt32, math.MaxInt32
	default:
		lo, hi = math.MinInt64, math.MaxInt64
	}
	x = math.Trunc(x)
	switch {
	case x <= float64(lo):
		return lo
	case x >= float64(hi): // float64(MaxInt64) is 2^63, just above it
		return hi
	}
	return int64(x)
}

// TestLittleEndianLayout checks the byte layout against encoding/binary.
func TestLittleEndianLayout(t *testing.T) {
	src := []float32{1.5, -2, 65504}
	b := make([]byte, 8*len(src))
	FromF32(F64, b, src)
	for i, v := range src {
		if got := binary.LittleEndian.Uint64(b[8*i:]); got != math.Float64bits(float64(v)) {
			t.Errorf("F64 element %d bytes = %#x, want %#x", i, got, math.Float64bits(float64(v)))
		}
	}
	FromF32(F16, b[:2*len(src)], src)
	wantH := []uint16{0x3e00, 0xc000, 0x7bff}
	for i := range src {
		if got := binary.LittleEndian.Uint16(b[2*i:]); got != wantH[i] {
			t.Errorf("F16 element %d bytes = %#04x, want %#04x", i, got, wantH[i])
		}
	}
	ib := binary.LittleEndian.AppendUint32(nil, uint32(0xfffffffe)) // int32 -2
	ib = binary.LittleEndian.AppendUint32(ib, 70000)
	got := make([]float32, 2)
	ToF32(got, I32, ib)
	if got[0] != -2 || got[1] != 70000 {
		t.Errorf("ToF32(I32, % x) = %v, want [-2 70000]", ib, got)
	}
}

// TestLengthPanics checks that mismatched lengths and invalid dtypes panic
// with a message naming the function, the lengths and the dtype.
func TestLengthPanics(t *testing.T) {
	mustPanic(t, "F32ToF16", func() { F32ToF16(make([]uint16, 3), make([]float32, 4)) }, "F32ToF16", "3", "4")
	mustPanic(t, "F16ToF32s", func() { F16ToF32s(make([]float32, 5), make([]uint16, 2)) }, "F16ToF32s", "5", "2")
	mustPanic(t, "F32ToBF16", func() { F32ToBF16(make([]uint16, 0), make([]float32, 7)) }, "F32ToBF16", "0", "7")
	mustPanic(t, "BF16ToF32s", func() { BF16ToF32s(make([]float32, 9), make([]uint16, 8)) }, "BF16ToF32s", "9", "8")
	mustPanic(t, "ToF32", func() { ToF32(make([]float32, 3), F16, make([]byte, 5)) }, "ToF32", "3", "5", "f16")
	mustPanic(t, "FromF32", func() { FromF32(I32, make([]byte, 10), make([]float32, 3)) }, "FromF32", "10", "3", "i32")
	mustPanic(t, "ToF64", func() { ToF64(make([]float64, 2), F64, make([]byte, 8)) }, "ToF64", "2", "8")
	mustPanic(t, "FromF64", func() { FromF64(BF16, make([]byte, 2), make([]float64, 2)) }, "FromF64", "2", "bf16")
	mustPanic(t, "ToF32 invalid", func() { ToF32(nil, Invalid, nil) }, "ToF32", "invalid")
	mustPanic(t, "FromF64 undefined", func() { FromF64(DType(42), nil, nil) }, "FromF64", "dtype(42)")
}

// TestEmptyConversions checks that empty and nil inputs are accepted.
func TestEmptyConversions(t *testing.T) {
	for _, d := range All() {
		ToF32(nil, d, nil)
		FromF32(d, nil, nil)
		ToF64([]float64{}, d, []byte{})
		FromF64(d, []byte{}, []float64{})
	}
	F32ToF16(nil, nil)
	BF16ToF32s(nil, nil)
}
