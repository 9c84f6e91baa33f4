package dtype

import (
	"fmt"
	"unsafe"
)

// view reinterprets b as a slice of T without copying. It panics, naming
// fn, when len(b) is not a multiple of the element size or when b's first
// byte is not aligned for T (Go's pointer rules, and the checkptr mode that
// -race turns on, require aligned element pointers).
func view[T any](fn string, b []byte) []T {
	var zero T
	size := int(unsafe.Sizeof(zero))
	if len(b)%size != 0 {
		panic(fmt.Sprintf("dtype.%s: byte length %d is not a multiple of the element size %d", fn, len(b), size))
	}
	if len(b) == 0 {
		return []T{}
	}
	p := unsafe.Pointer(unsafe.SliceData(b))
	if align := unsafe.Alignof(zero); uintptr(p)%align != 0 {
		panic(fmt.Sprintf("dtype.%s: address %p is not %d-byte aligned", fn, p, align))
	}
	return unsafe.Slice((*T)(p), len(b)/size)
}

// AsF64 returns the float64 elements stored in b, sharing b's memory.
// len(b) must be a multiple of 8 and b must be 8-byte aligned; it panics
// otherwise. An empty b gives an empty slice.
func AsF64(b []byte) []float64 { return view[float64]("AsF64", b) }

// AsF32 returns the float32 elements stored in b, sharing b's memory.
// len(b) must be a multiple of 4 and b must be 4-byte aligned; it panics
// otherwise. An empty b gives an empty slice.
func AsF32(b []byte) []float32 { return view[float32]("AsF32", b) }

// AsU16 returns the 16-bit patterns stored in b, sharing b's memory; this
// is the view used for F16 and BF16 storage. len(b) must be even and b must
// be 2-byte aligned; it panics otherwise. An empty b gives an empty slice.
func AsU16(b []byte) []uint16 { return view[uint16]("AsU16", b) }

// AsI8 returns the int8 elements stored in b, sharing b's memory. Any
// length and address is acceptable. An empty b gives an empty slice.
func AsI8(b []byte) []int8 { return view[int8]("AsI8", b) }

// AsI32 returns the int32 elements stored in b, sharing b's memory.
// len(b) must be a multiple of 4 and b must be 4-byte aligned; it panics
// otherwise. An empty b gives an empty slice.
func AsI32(b []byte) []int32 { return view[int32]("AsI32", b) }

// AsI64 returns the int64 elements stored in b, sharing b's memory.
// len(b) must be a multiple of 8 and b must be 8-byte aligned; it panics
// otherwise. An empty b gives an empty slice.
func AsI64(b []byte) []int64 { return view[int64]("AsI64", b) }

// Bytes returns the bytes of s, sharing s's memory: the reverse of the As
// functions. The result has len(s) times the element size bytes; an empty
// s gives an empty slice.
func Bytes[T float64 | float32 | uint16 | int8 | int32 | int64](s []T) []byte {
	if len(s) == 0 {
		return []byte{}
	}
	var zero T
	n := len(s) * int(unsafe.Sizeof(zero))
	return unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(s))), n)
}

// aligned reports whether b's first byte sits on an align-byte boundary;
// an empty b counts as aligned.
func aligned(b []byte, align uintptr) bool {
	return len(b) == 0 || uintptr(unsafe.Pointer(unsafe.SliceData(b)))%align == 0
}
