package kernels

import "math"

// The maps from Philox blocks to float64 pairs that nn's initialisation
// uses: one block gives two 53-bit uniforms u₁ (words 0, 1) and u₂ (words
// 2, 3).

// Uniform53 maps two random words to a float64 in [0, 1) from their top
// 53 bits: ((hi·2³² + lo) >> 11) · 2⁻⁵³, which a float64 holds exactly.
func Uniform53(hi, lo uint32) float64 {
	return float64((uint64(hi)<<32|uint64(lo))>>11) * 0x1p-53
}

// PhiloxUniform writes dst[2q], dst[2q+1] = lo+(hi−lo)·u₁, lo+(hi−lo)·u₂
// of blocks[q]; dst holds 2·len(blocks) elements.
func PhiloxUniform(dst []float64, blocks [][4]uint32, lo, hi float64) {
	dst = dst[:2*len(blocks)]
	for q, w := range blocks {
		u1, u2 := Uniform53(w[0], w[1]), Uniform53(w[2], w[3])
		dst[2*q], dst[2*q+1] = lo+(hi-lo)*u1, lo+(hi-lo)*u2
	}
}

// PhiloxNormal writes the Box–Muller pair of blocks[q] to dst[2q] and
// dst[2q+1]: mean+std·r·cos(2πu₂) and mean+std·r·sin(2πu₂), with
// r = √(−2·ln(1−u₁)), computed as math.Sqrt, math.Log and math.Sincos do;
// dst holds 2·len(blocks) elements. On AVX-512 it maps eight blocks at a
// time with the same IEEE operations in the same order, bit for bit.
func PhiloxNormal(dst []float64, blocks [][4]uint32, mean, std float64) {
	dst = dst[:2*len(blocks)]
	n := philoxNormalAsm(dst, blocks, mean, std)
	philoxNormalGo(dst[2*n:], blocks[n:], mean, std)
}

// philoxNormalGo is PhiloxNormal in Go, one block at a time.
func philoxNormalGo(dst []float64, blocks [][4]uint32, mean, std float64) {
	for q, w := range blocks {
		u1, u2 := Uniform53(w[0], w[1]), Uniform53(w[2], w[3])
		r := math.Sqrt(-2 * math.Log(1-u1))
		s, c := math.Sincos(2 * math.Pi * u2)
		dst[2*q], dst[2*q+1] = mean+std*r*c, mean+std*r*s
	}
}
