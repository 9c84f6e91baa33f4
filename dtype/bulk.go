package dtype

import (
	"fmt"
	"unsafe"
)

// elem is the set of Go types that back the dtypes in memory.
type elem interface {
	float64 | float32 | uint16 | int8 | int32 | int64
}

// F32ToF16 stores F16FromF32(src[i]) in dst[i] for every i. It panics if
// the slices differ in length.
func F32ToF16(dst []uint16, src []float32) {
	sameLen("F32ToF16", len(dst), len(src))
	for i, v := range src {
		dst[i] = F16FromF32(v)
	}
}

// F16ToF32s stores F16ToF32(src[i]) in dst[i] for every i. It panics if
// the slices differ in length.
func F16ToF32s(dst []float32, src []uint16) {
	sameLen("F16ToF32s", len(dst), len(src))
	for i, h := range src {
		dst[i] = F16ToF32(h)
	}
}

// F32ToBF16 stores BF16FromF32(src[i]) in dst[i] for every i. It panics if
// the slices differ in length.
func F32ToBF16(dst []uint16, src []float32) {
	sameLen("F32ToBF16", len(dst), len(src))
	for i, v := range src {
		dst[i] = BF16FromF32(v)
	}
}

// BF16ToF32s stores BF16ToF32(src[i]) in dst[i] for every i. It panics if
// the slices differ in length.
func BF16ToF32s(dst []float32, src []uint16) {
	sameLen("BF16ToF32s", len(dst), len(src))
	for i, b := range src {
		dst[i] = BF16ToF32(b)
	}
}

// ToF32 converts the len(dst) elements of type d held in the little-endian
// bytes src into float32. src must hold exactly len(dst)*d.Size() bytes and
// d must be valid; it panics otherwise. F64 rounds to the nearest float32
// (ties to even, overflow to ±Inf); F16 and BF16 are exact; I8 is exact and
// so are I32 and I64 values of magnitude up to 2^24, while larger ones
// round to the nearest float32, ties to even. src may have any alignment.
func ToF32(dst []float32, d DType, src []byte) {
	checkBytes("ToF32", d, len(dst), len(src))
	switch d {
	case F64:
		for i, v := range load[float64](src) {
			dst[i] = float32(v)
		}
	case F32:
		copy(dst, load[float32](src))
	case F16:
		F16ToF32s(dst, load[uint16](src))
	case BF16:
		BF16ToF32s(dst, load[uint16](src))
	case I8:
		for i, v := range load[int8](src) {
			dst[i] = float32(v)
		}
	case I32:
		for i, v := range load[int32](src) {
			dst[i] = float32(v)
		}
	case I64:
		for i, v := range load[int64](src) {
			dst[i] = float32(v)
		}
	}
}

// FromF32 converts the float32 values in src to type d and writes them as
// little-endian bytes to dst, which must hold exactly len(src)*d.Size()
// bytes; d must be valid. It panics otherwise. F64 is exact; F16 and BF16
// round as F16FromF32 and BF16FromF32 do. Integer types truncate toward
// zero and saturate to the type's range (±Inf included); NaN becomes 0.
// dst may have any alignment.
func FromF32(d DType, dst []byte, src []float32) {
	checkBytes("FromF32", d, len(src), len(dst))
	switch d {
	case F64:
		out := target[float64](dst)
		for i, v := range src {
			out[i] = float64(v)
		}
		commit(dst, out)
	case F32:
		commit(dst, src)
	case F16:
		out := target[uint16](dst)
		F32ToF16(out, src)
		commit(dst, out)
	case BF16:
		out := target[uint16](dst)
		F32ToBF16(out, src)
		commit(dst, out)
	case I8:
		out := AsI8(dst)
		for i, v := range src {
			out[i] = satI8(float64(v))
		}
	case I32:
		out := target[int32](dst)
		for i, v := range src {
			out[i] = satI32(float64(v))
		}
		commit(dst, out)
	case I64:
		out := target[int64](dst)
		for i, v := range src {
			out[i] = satI64(float64(v))
		}
		commit(dst, out)
	}
}

// ToF64 converts the len(dst) elements of type d held in the little-endian
// bytes src into float64. src must hold exactly len(dst)*d.Size() bytes and
// d must be valid; it panics otherwise. Every dtype converts exactly except
// I64 values of magnitude above 2^53, which round to the nearest float64,
// ties to even. src may have any alignment.
func ToF64(dst []float64, d DType, src []byte) {
	checkBytes("ToF64", d, len(dst), len(src))
	switch d {
	case F64:
		copy(dst, load[float64](src))
	case F32:
		for i, v := range load[float32](src) {
			dst[i] = float64(v)
		}
	case F16:
		for i, h := range load[uint16](src) {
			dst[i] = float64(F16ToF32(h))
		}
	case BF16:
		for i, b := range load[uint16](src) {
			dst[i] = float64(BF16ToF32(b))
		}
	case I8:
		for i, v := range load[int8](src) {
			dst[i] = float64(v)
		}
	case I32:
		for i, v := range load[int32](src) {
			dst[i] = float64(v)
		}
	case I64:
		for i, v := range load[int64](src) {
			dst[i] = float64(v)
		}
	}
}

// FromF64 converts the float64 values in src to type d and writes them as
// little-endian bytes to dst, which must hold exactly len(src)*d.Size()
// bytes; d must be valid. It panics otherwise. F32 uses Go's float32
// conversion (nearest, ties to even). F16 and BF16 are rounded once,
// directly from the float64 value, to nearest with ties to even; going
// through float32 first would round twice and can be off by one step.
// Integer types behave as in FromF32. dst may have any alignment.
func FromF64(d DType, dst []byte, src []float64) {
	checkBytes("FromF64", d, len(src), len(dst))
	switch d {
	case F64:
		commit(dst, src)
	case F32:
		out := target[float32](dst)
		for i, v := range src {
			out[i] = float32(v)
		}
		commit(dst, out)
	case F16:
		out := target[uint16](dst)
		for i, v := range src {
			out[i] = f16FromF64(v)
		}
		commit(dst, out)
	case BF16:
		out := target[uint16](dst)
		for i, v := range src {
			out[i] = bf16FromF64(v)
		}
		commit(dst, out)
	case I8:
		out := AsI8(dst)
		for i, v := range src {
			out[i] = satI8(v)
		}
	case I32:
		out := target[int32](dst)
		for i, v := range src {
			out[i] = satI32(v)
		}
		commit(dst, out)
	case I64:
		out := target[int64](dst)
		for i, v := range src {
			out[i] = satI64(v)
		}
		commit(dst, out)
	}
}

// satI8 truncates x toward zero and clamps it to the int8 range; NaN gives 0.
func satI8(x float64) int8 {
	switch {
	case x != x:
		return 0
	case x >= 127:
		return 127
	case x <= -128:
		return -128
	}
	return int8(x)
}

// satI32 truncates x toward zero and clamps it to the int32 range; NaN
// gives 0.
func satI32(x float64) int32 {
	switch {
	case x != x:
		return 0
	case x >= 2147483647:
		return 2147483647
	case x <= -2147483648:
		return -2147483648
	}
	return int32(x)
}

// satI64 truncates x toward zero and clamps it to the int64 range; NaN
// gives 0. The bound 1<<63 is exact in float64, so every x below it
// converts without overflow.
func satI64(x float64) int64 {
	const limit = 1 << 63
	switch {
	case x != x:
		return 0
	case x >= limit:
		return 1<<63 - 1
	case x <= -limit:
		return -1 << 63
	}
	return int64(x)
}

// load returns the elements in src as a []T: a view when src is aligned
// for T, otherwise an aligned copy. len(src) must already be checked.
func load[T elem](src []byte) []T {
	var zero T
	if aligned(src, unsafe.Alignof(zero)) {
		return view[T]("load", src)
	}
	out := make([]T, len(src)/int(unsafe.Sizeof(zero)))
	copy(Bytes(out), src)
	return out
}

// target returns a []T to write results into for dst: a view of dst when
// it is aligned for T, otherwise a scratch slice that commit copies back.
func target[T elem](dst []byte) []T {
	var zero T
	if aligned(dst, unsafe.Alignof(zero)) {
		return view[T]("target", dst)
	}
	return make([]T, len(dst)/int(unsafe.Sizeof(zero)))
}

// commit copies out into dst unless out already is dst's memory.
func commit[T elem](dst []byte, out []T) {
	b := Bytes(out)
	if len(b) > 0 && unsafe.SliceData(b) == unsafe.SliceData(dst) {
		return
	}
	copy(dst, b)
}

// sameLen panics, naming fn, when the two slice lengths differ.
func sameLen(fn string, dst, src int) {
	if dst != src {
		panic(fmt.Sprintf("dtype.%s: len(dst)=%d != len(src)=%d", fn, dst, src))
	}
}

// checkBytes panics, naming fn, unless d is valid and nbytes is exactly n
// elements of d.
func checkBytes(fn string, d DType, n, nbytes int) {
	if !d.Valid() {
		panic(fmt.Sprintf("dtype.%s: invalid dtype %v", fn, d))
	}
	if n*d.Size() != nbytes {
		panic(fmt.Sprintf("dtype.%s: %d bytes do not hold %d %v elements (want %d bytes)",
			fn, nbytes, n, d, n*d.Size()))
	}
}
