package dtype

import "math"

// Bit layout of the formats used here, as (exponent bits, fraction bits):
//
//	binary64 (F64)  11, 52   bias 1023
//	binary32 (F32)   8, 23   bias 127
//	binary16 (F16)   5, 10   bias 15
//	bfloat16 (BF16)  8,  7   bias 127

const (
	f16SignMask = 0x8000
	f16ExpMask  = 0x7c00 // also the bit pattern of +Inf
	f16FracMask = 0x03ff
	f16Quiet    = 0x0200 // top fraction bit: the quiet-NaN bit

	bf16Quiet = 0x0040 // top fraction bit of a bfloat16
)

// F16FromF32 rounds f to the nearest IEEE 754 binary16 value, breaking
// ties toward the value with an even last fraction bit, and returns its bit
// pattern. Magnitudes that round beyond the largest finite half (65504)
// become ±Inf; magnitudes at or below half the smallest subnormal (2^-25)
// become ±0 with the sign of f. Subnormal results are rounded exactly. A
// NaN input gives a NaN with the same sign, the quiet bit set and the top
// ten fraction bits of f's payload.
func F16FromF32(f float32) uint16 {
	bits := math.Float32bits(f)
	sign := uint16(bits>>16) & f16SignMask
	abs := bits & 0x7fffffff

	switch {
	case abs >= 0x47800000: // |f| >= 2^16, Inf or NaN
		if abs > 0x7f800000 {
			return sign | f16ExpMask | f16Quiet | uint16(abs>>13)&f16FracMask
		}
		return sign | f16ExpMask
	case abs >= 0x38800000: // |f| >= 2^-14: the result is normal (or Inf)
		// Rebias the exponent from 127 to 15, keeping the F32 layout, so
		// that v>>13 is the half pattern before rounding. Adding 0xfff
		// rounds up when the 13 dropped bits exceed half; adding the kept
		// lsb as well sends the exact tie to even. A carry out of the
		// fraction bumps the exponent, from 30 to Inf at the top.
		v := abs - (127-15)<<23
		v += 0xfff + (v>>13)&1
		return sign | uint16(v>>13)
	case abs < 0x33000000: // |f| < 2^-25, F32 zeros and subnormals included
		return sign
	}
	// Subnormal result. The value is full*2^(e-23) with e in [-25, -15]
	// and one subnormal step is 2^-24, so the result is full >> shift,
	// rounded to nearest even.
	e := int(abs>>23) - 127
	shift := uint(-e - 1) // 14..24
	full := abs&0x7fffff | 0x800000
	r := full >> shift
	rem := full & (1<<shift - 1)
	half := uint32(1) << (shift - 1)
	if rem > half || (rem == half && r&1 == 1) {
		r++ // may reach 0x400, the smallest normal, which is correct
	}
	return sign | uint16(r)
}

// F16ToF32 returns the float32 value of the binary16 bit pattern h. Every
// half value, subnormals included, is exactly representable in float32, so
// the conversion is exact. Infinities stay infinities and a NaN stays a NaN
// with its sign and payload.
func F16ToF32(h uint16) float32 {
	sign := uint32(h&f16SignMask) << 16
	exp := h & f16ExpMask
	if exp != 0 && exp != f16ExpMask {
		// Normal: move exponent and fraction into place and rebias the
		// exponent from 15 to 127.
		return math.Float32frombits(sign | (uint32(h&0x7fff)<<13 + (127-15)<<23))
	}
	frac := uint32(h & f16FracMask)
	if exp != 0 {
		return math.Float32frombits(sign | 0x7f800000 | frac<<13) // Inf or NaN
	}
	// Zero or subnormal: frac * 2^-24, where both the conversion of frac
	// and the scaling by a power of two are exact.
	v := float32(frac) * 0x1p-24
	if sign != 0 {
		v = -v
	}
	return v
}

// BF16FromF32 rounds f to the nearest bfloat16 value, breaking ties toward
// the value with an even last fraction bit, and returns its bit pattern.
// Because bfloat16 has F32's exponent range, only values within half a
// bfloat16 step of the float32 maximum overflow to ±Inf, and F32
// subnormals round like any other value. A NaN input gives a NaN with the
// same sign and the quiet bit set; it never becomes Inf, which plain
// truncation of a NaN with only low payload bits would produce.
func BF16FromF32(f float32) uint16 {
	bits := math.Float32bits(f)
	if bits&0x7fffffff > 0x7f800000 {
		return uint16(bits>>16) | bf16Quiet
	}
	// Adding 0x7fff rounds up when the low half exceeds 0x8000; the extra
	// lsb of the kept half turns the exact tie into round-to-even.
	bits += 0x7fff + (bits>>16)&1
	return uint16(bits >> 16)
}

// BF16ToF32 returns the float32 value of the bfloat16 bit pattern b, which
// is exact: b becomes the top 16 bits of the float32.
func BF16ToF32(b uint16) float32 {
	return math.Float32frombits(uint32(b) << 16)
}

// f16FromF64 rounds x directly to the nearest binary16 value, ties to even.
func f16FromF64(x float64) uint16 {
	return narrowF64(x, 5, 10)
}

// bf16FromF64 rounds x directly to the nearest bfloat16 value, ties to
// even.
func bf16FromF64(x float64) uint16 {
	return narrowF64(x, 8, 7)
}

// narrowF64 rounds x once, to nearest with ties to even, into a binary
// format of at most 16 bits with expBits exponent bits and fracBits
// fraction bits, and returns the bit pattern. Rounding straight from
// float64 avoids the double rounding that going through float32 causes.
// NaN keeps its sign and gets the quiet bit.
func narrowF64(x float64, expBits, fracBits uint) uint16 {
	bits := math.Float64bits(x)
	sign := uint16(bits>>48) & 0x8000
	exp := int(bits>>52) & 0x7ff
	frac := bits & (1<<52 - 1)

	bias := 1<<(expBits-1) - 1
	inf := uint16(1<<expBits-1) << fracBits
	drop := 52 - fracBits // fraction bits that do not fit

	if exp == 0x7ff {
		if frac != 0 {
			return sign | inf | 1<<(fracBits-1) | uint16(frac>>drop)
		}
		return sign | inf
	}
	if exp == 0 {
		return sign // float64 zero or subnormal: far below both targets
	}
	e := exp - 1023
	if e > bias {
		return sign | inf
	}
	if e >= 1-bias {
		r := uint64(e+bias)<<fracBits | frac>>drop
		rem := frac & (1<<drop - 1)
		half := uint64(1) << (drop - 1)
		if rem > half || (rem == half && r&1 == 1) {
			r++ // a carry into the exponent is right, up to Inf
		}
		return sign | uint16(r)
	}
	// Subnormal target: value = full*2^(e-52), step = 2^(1-bias-fracBits).
	shift := drop + uint(1-bias-e)
	if shift > 53 {
		return sign // below half the smallest subnormal
	}
	full := frac | 1<<52
	r := full >> shift
	rem := full & (1<<shift - 1)
	half := uint64(1) << (shift - 1)
	if rem > half || (rem == half && r&1 == 1) {
		r++
	}
	return sign | uint16(r)
}
