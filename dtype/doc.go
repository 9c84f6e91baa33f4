// Package dtype defines the element types of headroom tensors and the
// conversions between them.
//
// # Element types
//
// A DType names how one element of a tensor is stored:
//
//	dtype  bytes  Go type  what it is
//	f64    8      float64  IEEE 754 binary64: 53-bit significand, ~16 digits
//	f32    4      float32  IEEE 754 binary32: 24-bit significand, ~7 digits
//	f16    2      uint16   IEEE 754 binary16: 11-bit significand, ~3 digits,
//	                       largest finite 65504, smallest normal 2^-14,
//	                       smallest subnormal 2^-24
//	bf16   2      uint16   bfloat16: the top 16 bits of a binary32, so the
//	                       same range as f32 (about 3.4e38) but only an
//	                       8-bit significand, ~2 digits
//	i8     1      int8     two's complement, -128 to 127
//	i32    4      int32    two's complement, about ±2.1e9
//	i64    8      int64    two's complement, about ±9.2e18
//
// Go has no 16-bit float type, so f16 and bf16 values travel as their raw
// bit patterns in a uint16 and are computed on after widening to float32.
// The zero DType is Invalid, which is not a type at all; Parse turns names
// such as "f32", "float" or "BFloat16" into a DType.
//
// # Rounding
//
// Narrowing a float (f64 to f32, f32 or f64 to f16 or bf16) rounds to the
// nearest representable value; when the input lies exactly halfway between
// two neighbours it goes to the one whose last significand bit is 0 ("ties
// to even"), the IEEE 754 default. For example 1 + 2^-11 lies halfway
// between the halves 1 and 1 + 2^-10 and becomes 1.
//
// Rounding happens once. Converting f64 to f16 via f32 would round twice,
// and the first rounding can land exactly on an f16 halfway point that the
// original value was not on; FromF64 therefore rounds f16 and bf16
// straight from the float64.
//
// Widening (f16 or bf16 to f32, anything float to f64) is always exact.
//
// # Infinity, NaN, overflow and underflow
//
// Infinities keep their sign through every float conversion. A value whose
// magnitude rounds past the largest finite value of the target becomes
// ±Inf: for f16 that is anything from 65520 (65504 plus half a step) up.
// A value smaller than half the smallest subnormal, or exactly half of it,
// becomes a zero of the same sign; values in between round to subnormals
// exactly like any other value.
//
// NaN stays NaN with its sign. When narrowing, the quiet bit (the top
// significand bit) is set and the upper payload bits are kept. Setting the
// quiet bit matters for bf16: truncating the float32 NaN 0x7f800001 to its
// top 16 bits would give 0x7f80, which is +Inf.
//
// # Integers
//
// Integers convert to floats exactly whenever the float can hold them:
// every i8; i32 and i64 up to 2^24 in magnitude for f32 and up to 2^53 for
// f64. Larger values round to the nearest float, ties to even.
//
// Floats convert to integers by truncating toward zero (2.9 gives 2, -2.9
// gives -2) and then saturating: anything beyond the type's range,
// infinities included, becomes the type's minimum or maximum (300.7 as i8
// is 127, -1e20 as i64 is -9223372036854775808). NaN becomes 0. Go's own
// conversion leaves out-of-range results unspecified; these functions
// never do.
//
// # Storage and byte order
//
// Tensor storage is a []byte. ToF32, FromF32, ToF64 and FromF64 convert
// between that storage, for any dtype, and float32 or float64 slices. The
// As functions (AsF32, AsU16, ...) reinterpret storage as typed elements
// without copying, and Bytes is their reverse. All of this assumes the
// machine is little-endian, as amd64 and arm64 are, so that the in-memory
// layout of storage is the little-endian encoding of its elements.
//
// The As functions need len(b) to be a multiple of the element size and
// b's first byte to be aligned to the element size; they panic otherwise.
// Buffers from make([]byte, n) with n a multiple of the element size are
// aligned in practice. The To and From functions accept storage at any
// address.
package dtype
