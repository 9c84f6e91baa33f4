package optim

import "math"

// This file holds the fast nearest-code lookup of the 8-bit state. The
// binary search of quantMap.nearest (8 dependent loads per element) stays as
// the reference; quantLookup gives the same code with one table load and
// a short forward scan.
//
// A float32 x with |x| < 1 is sorted into one of lookupKeys buckets by its
// sign, its exponent (clamped below at lookupMinExp: all smaller magnitudes,
// ±0 and denormals join the lowest bucket of their sign) and the top
// lookupMantBits bits of its mantissa. Each bucket is an interval of x;
// lower holds the first map index whose value is >= the interval's lowest x,
// a lower bound of the index the binary search finds, from which nearest
// scans forward to the exact one. |x| >= 1, infinities and NaN take the
// binary search.

const (
	lookupMantBits = 7                            // mantissa bits in a bucket key
	lookupExps     = 32                           // exponents covered below 2^0
	lookupMinExp   = 127 - lookupExps             // biased exponent of the lowest bucket
	lookupMag      = lookupExps << lookupMantBits // buckets per sign
	lookupKeys     = 2 * lookupMag                // 8192 buckets: 8 KiB per map
	lookupShift    = 23 - lookupMantBits          // mantissa bits below the key
	lookupLow      = 1<<lookupShift - 1           // mask of those bits
)

// quantLookup is a map with its bucket table.
type quantLookup struct {
	m     *quantMap
	lower [lookupKeys]uint8
}

// newQuantLookup builds the bucket table of m from m's own binary search.
func newQuantLookup(m *quantMap) *quantLookup {
	q := &quantLookup{m: m}
	for k := range q.lower {
		q.lower[k] = uint8(min(m.firstAtLeast(bucketLowest(k)), len(m)-1))
	}
	return q
}

// bucketLowest returns the lowest float32 of bucket k.
func bucketLowest(k int) float32 {
	mag := k % lookupMag
	bits := uint32(lookupMinExp+mag>>lookupMantBits)<<23 | uint32(mag%(1<<lookupMantBits))<<lookupShift
	if k < lookupMag {
		if mag == 0 {
			return 0 // the lowest positive bucket starts at +0
		}
		return math.Float32frombits(bits)
	}
	return -math.Float32frombits(bits | lookupLow) // a negative bucket's largest magnitude
}

// bucket returns the bucket key of x, or -1 when |x| >= 1 or x is not finite.
func bucket(x float32) int {
	b := math.Float32bits(x)
	e := int(b>>23) & 0xff
	if e >= 127 {
		return -1
	}
	k := (e-lookupMinExp)<<lookupMantBits | int(b>>lookupShift)&(1<<lookupMantBits-1)
	if e < lookupMinExp {
		k = 0
	}
	return k + int(b>>31)*lookupMag
}

// firstAtLeast returns the first index i with m[i] >= x (len(m) if none,
// 0 for NaN), by halving the 256 entries.
func (m *quantMap) firstAtLeast(x float32) int {
	i := 0
	for step := len(m) / 2; step > 0; step /= 2 {
		if m[i+step-1] < x {
			i += step
		}
	}
	return i
}

// pick returns the code closest to x given i = m.firstAtLeast(x); a tie
// goes to the lower code.
func (m *quantMap) pick(x float32, i int) uint8 {
	if i == len(m) {
		return uint8(len(m) - 1)
	}
	if i > 0 && x-m[i-1] <= m[i]-x {
		return uint8(i - 1)
	}
	return uint8(i)
}

// nearest returns the same code as q.m.nearest(x).
func (q *quantLookup) nearest(x float32) uint8 {
	k := bucket(x)
	if k < 0 {
		return q.m.nearest(x)
	}
	i := int(q.lower[k])
	for i < len(q.m) && q.m[i] < x {
		i++
	}
	return q.m.pick(x, i)
}

// quantiseBlock is quantMap.quantiseBlock with the fast lookup.
func (q *quantLookup) quantiseBlock(codes []uint8, src []float32) float32 {
	absmax, inv := blockScale(src)
	codes = codes[:len(src)]
	for i, x := range src {
		codes[i] = q.nearest(x * inv)
	}
	return absmax
}

// The lookups of the two maps of the 8-bit state: 2·lookupKeys bytes of
// tables (16 KiB), built once.
var (
	signedLookup   = newQuantLookup(&signedMap)
	unsignedLookup = newQuantLookup(&unsignedMap)
)
