package dtype

import (
	"encoding/binary"
	"math"
	"testing"
)

// TestViewsShareMemory checks each As function against encoding/binary
// and that writes through the view land in the original bytes.
func TestViewsShareMemory(t *testing.T) {
	b := make([]byte, 16)
	for i := range b {
		b[i] = byte(i*17 + 3)
	}
	le := binary.LittleEndian

	f64 := AsF64(b)
	if len(f64) != 2 || math.Float64bits(f64[1]) != le.Uint64(b[8:]) {
		t.Errorf("AsF64: len %d, [1] bits %#x, want 2, %#x", len(f64), math.Float64bits(f64[1]), le.Uint64(b[8:]))
	}
	f32 := AsF32(b)
	if len(f32) != 4 || math.Float32bits(f32[2]) != le.Uint32(b[8:]) {
		t.Errorf("AsF32: len %d, [2] bits %#x, want 4, %#x", len(f32), math.Float32bits(f32[2]), le.Uint32(b[8:]))
	}
	u16 := AsU16(b)
	if len(u16) != 8 || u16[3] != le.Uint16(b[6:]) {
		t.Errorf("AsU16: len %d, [3] %#x, want 8, %#x", len(u16), u16[3], le.Uint16(b[6:]))
	}
	i8 := AsI8(b)
	if len(i8) != 16 || i8[15] != int8(b[15]) {
		t.Errorf("AsI8: len %d, [15] %d, want 16, %d", len(i8), i8[15], int8(b[15]))
	}
	i32 := AsI32(b)
	if len(i32) != 4 || i32[1] != int32(le.Uint32(b[4:])) {
		t.Errorf("AsI32: len %d, [1] %d, want 4, %d", len(i32), i32[1], int32(le.Uint32(b[4:])))
	}
	i64 := AsI64(b)
	if len(i64) != 2 || i64[0] != int64(le.Uint64(b)) {
		t.Errorf("AsI64: len %d, [0] %d, want 2, %d", len(i64), i64[0], int64(le.Uint64(b)))
	}

	f32[1] = -1.5
	if got := le.Uint32(b[4:]); got != math.Float32bits(-1.5) {
		t.Errorf("write through AsF32 gave bytes %#x, want %#x", got, math.Float32bits(-1.5))
	}
	i64[1] = -2
	if got := le.Uint64(b[8:]); got != 0xfffffffffffffffe {
		t.Errorf("write through AsI64 gave bytes %#x, want 0xfffffffffffffffe", got)
	}
}

// TestBytesIsReverseView checks that Bytes shares memory with its input
// and has the right length for every element type.
func TestBytesIsReverseView(t *testing.T) {
	s := []float32{1, 2, 3}
	b := Bytes(s)
	if len(b) != 12 {
		t.Fatalf("len(Bytes([]float32 of 3)) = %d, want 12", len(b))
	}
	if got := binary.LittleEndian.Uint32(b[4:]); got != math.Float32bits(2) {
		t.Errorf("Bytes element 1 = %#x, want %#x", got, math.Float32bits(2))
	}
	b[0], b[1], b[2], b[3] = 0, 0, 0xc0, 0x3f // 1.5 little-endian
	if s[0] != 1.5 {
		t.Errorf("write through Bytes: s[0] = %g, want 1.5", s[0])
	}
	if &AsF32(b)[0] != &s[0] {
		t.Errorf("AsF32(Bytes(s)) does not alias s")
	}
	lens := []int{
		len(Bytes(make([]float64, 3))), len(Bytes(make([]uint16, 3))), len(Bytes(make([]int8, 3))),
		len(Bytes(make([]int32, 3))), len(Bytes(make([]int64, 3))),
	}
	for i, want := range []int{24, 6, 3, 12, 24} {
		if lens[i] != want {
			t.Errorf("Bytes length case %d = %d, want %d", i, lens[i], want)
		}
	}
}

// TestViewEmpty checks that empty inputs give empty, non-nil views.
func TestViewEmpty(t *testing.T) {
	checks := map[string]int{
		"AsF64": len(AsF64(nil)), "AsF32": len(AsF32([]byte{})), "AsU16": len(AsU16(nil)),
		"AsI8": len(AsI8(nil)), "AsI32": len(AsI32(nil)), "AsI64": len(AsI64([]byte{})),
		"Bytes": len(Bytes([]float32(nil))),
	}
	for name, n := range checks {
		if n != 0 {
			t.Errorf("%s(empty) has length %d", name, n)
		}
	}
	if AsF32(nil) == nil || Bytes([]int64(nil)) == nil {
		t.Errorf("empty views should be empty, non-nil slices")
	}
}

// TestViewPanics checks the panics for bad lengths and misaligned
// addresses, and that AsI8 accepts any address.
func TestViewPanics(t *testing.T) {
	b := make([]byte, 32)
	mustPanic(t, "AsF64 len", func() { AsF64(b[:12]) }, "AsF64", "12", "8")
	mustPanic(t, "AsF32 len", func() { AsF32(b[:6]) }, "AsF32", "6", "4")
	mustPanic(t, "AsU16 len", func() { AsU16(b[:3]) }, "AsU16", "3", "2")
	mustPanic(t, "AsI32 len", func() { AsI32(b[:5]) }, "AsI32", "5", "4")
	mustPanic(t, "AsI64 len", func() { AsI64(b[:1]) }, "AsI64", "1", "8")
	mustPanic(t, "AsF32 misaligned", func() { AsF32(b[1:5]) }, "AsF32", "aligned")
	mustPanic(t, "AsF64 misaligned", func() { AsF64(b[4:12]) }, "AsF64", "aligned")
	mustPanic(t, "AsU16 misaligned", func() { AsU16(b[3:5]) }, "AsU16", "aligned")
	if got := len(AsI8(b[3:8])); got != 5 {
		t.Errorf("AsI8 of 5 odd-aligned bytes has length %d, want 5", got)
	}
}
