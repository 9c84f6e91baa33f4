// half.h: exact 16-bit float conversions for the fake cuBLAS, with package
// dtype's semantics: widening is exact; narrowing from double rounds once to
// nearest, ties to even, keeps a NaN's sign and sets its quiet bit.
#ifndef HEADROOM_EMU_HALF_H
#define HEADROOM_EMU_HALF_H

#include <math.h>
#include <stdint.h>
#include <string.h>

static inline double emu_f16_to_f64(uint16_t h) {
	int exp = (h >> 10) & 0x1f;
	double frac = h & 0x3ff, v;
	if (exp == 0) v = ldexp(frac, -24);
	else if (exp == 31) v = frac ? NAN : INFINITY;
	else v = ldexp(frac + 1024, exp - 25);
	return h & 0x8000 ? -v : v;
}

static inline double emu_bf16_to_f64(uint16_t b) {
	uint32_t u = (uint32_t)b << 16;
	float f;
	memcpy(&f, &u, 4);
	return f;
}

// emu_narrow rounds x into a format of expBits exponent and fracBits fraction bits.
static inline uint16_t emu_narrow(double x, int expBits, int fracBits) {
	uint64_t bits;
	memcpy(&bits, &x, 8);
	uint16_t sign = (uint16_t)(bits >> 48) & 0x8000;
	int exp = (int)(bits >> 52) & 0x7ff;
	uint64_t frac = bits & ((1ull << 52) - 1);
	int bias = (1 << (expBits - 1)) - 1;
	uint16_t inf = (uint16_t)(((1 << expBits) - 1) << fracBits);
	int drop = 52 - fracBits;
	if (exp == 0x7ff) return frac ? (uint16_t)(sign | inf | (1 << (fracBits - 1)) | (uint16_t)(frac >> drop)) : (uint16_t)(sign | inf);
	if (exp == 0) return sign;
	int e = exp - 1023;
	if (e > bias) return sign | inf;
	if (e >= 1 - bias) {
		uint64_t r = ((uint64_t)(e + bias) << fracBits) | (frac >> drop);
		uint64_t rem = frac & ((1ull << drop) - 1), half = 1ull << (drop - 1);
		if (rem > half || (rem == half && (r & 1))) r++;
		return sign | (uint16_t)r;
	}
	int shift = drop + (1 - bias - e);
	if (shift > 53) return sign;
	uint64_t full = frac | (1ull << 52);
	uint64_t r = full >> shift, rem = full & ((1ull << shift) - 1), half = 1ull << (shift - 1);
	if (rem > half || (rem == half && (r & 1))) r++;
	return sign | (uint16_t)r;
}

static inline uint16_t emu_f64_to_f16(double x) { return emu_narrow(x, 5, 10); }
static inline uint16_t emu_f64_to_bf16(double x) { return emu_narrow(x, 8, 7); }

#endif
