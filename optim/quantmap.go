package optim

import (
	"math"
	"sort"
)

// This file holds the building block of the 8-bit optimizer state (issue #19):
// the dynamic non-linear quantisation maps of Dettmers et al. 2022 and the
// per-block absmax quantise/dequantise pair. The maps are built here from the
// paper's description: after an optional sign bit, the run of leading zero
// bits gives a decimal exponent e (the value scale is 10^-e), the first one
// bit ends that run, and the remaining bits are a linear fraction in
// (0.1, 1]. A larger magnitude thus gets more fraction bits, a tiny one
// fewer, which fits Adam moments whose magnitudes span many decades.

// quantMap is a sorted table of the 256 values an 8-bit code stands for,
// normalised to [-1, 1] (signed) or [0, 1] (unsigned).
type quantMap [256]float32

// dynamicLevels appends the positive levels of a dynamic map whose magnitude
// part has bits bits: exponent e in [0, bits) carries bits-1-e fraction bits.
func dynamicLevels(out []float64, bits int) []float64 {
	for e := 0; e < bits; e++ {
		n := 1 << (bits - 1 - e)
		scale := math.Pow(10, -float64(e))
		for k := 1; k <= n; k++ {
			out = append(out, scale*(0.1+0.9*float64(k)/float64(n)))
		}
	}
	return out
}

// newQuantMap builds the signed map (for Adam's first moment: 1 sign bit and
// 7 magnitude bits) or the unsigned map (for the second moment: 8 magnitude
// bits). Both contain 0 and 1 exactly; the table is sorted ascending.
func newQuantMap(signed bool) quantMap {
	var vals []float64
	if signed {
		pos := dynamicLevels(nil, 7) // 127 levels
		vals = append(vals, 0, 0)    // the spare code duplicates 0
		for _, p := range pos {
			vals = append(vals, p, -p)
		}
	} else {
		vals = append(dynamicLevels(nil, 8), 0) // 255 levels + 0
	}
	sort.Float64s(vals)
	var m quantMap
	for i, v := range vals {
		m[i] = float32(v)
	}
	return m
}

// nearest returns the code whose value is closest to x (x already divided by
// the block's absmax, so in the map's range) by binary search: the
// reference of quantLookup.nearest.
func (m *quantMap) nearest(x float32) uint8 {
	return m.pick(x, m.firstAtLeast(x))
}

// blockScale returns the absmax of src and its reciprocal (0 and 0 for an
// all-zero block).
func blockScale(src []float32) (absmax, inv float32) {
	for _, x := range src {
		if a := float32(math.Abs(float64(x))); a > absmax {
			absmax = a
		}
	}
	if absmax > 0 {
		inv = 1 / absmax
	}
	return absmax, inv
}

// quantiseBlock writes one code per element of src into codes and returns
// the block's absmax (0 for an all-zero block, whose codes then all mean 0).
func (m *quantMap) quantiseBlock(codes []uint8, src []float32) float32 {
	absmax, inv := blockScale(src)
	for i, x := range src {
		codes[i] = m.nearest(x * inv)
	}
	return absmax
}

// dequantiseBlock writes absmax·map[code] for each code into dst.
func (m *quantMap) dequantiseBlock(dst []float32, codes []uint8, absmax float32) {
	for i, c := range codes {
		dst[i] = m[c] * absmax
	}
}
