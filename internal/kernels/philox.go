package kernels

import "math/bits"

// Philox4x32-10 (Salmon, Moraes, Dror and Shaw, "Parallel random numbers: as
// easy as 1, 2, 3", SC 2011) is a counter-based generator: the random words
// for position c under key k are a pure function Philox(c, k), so any element
// of a stream can be drawn without drawing those before it. Dropout uses it
// so that backward (and checkpoint recomputation) regenerate a mask from
// (seed, offset) instead of storing it.
const (
	philoxM0 = 0xD2511F53 // multiplier of words 0 and 1
	philoxM1 = 0xCD9E8D57 // multiplier of words 2 and 3
	philoxW0 = 0x9E3779B9 // key schedule increment of key word 0 (golden ratio)
	philoxW1 = 0xBB67AE85 // key schedule increment of key word 1 (√3 − 1)
)

// Philox4x32 returns the four 32-bit words of Philox4x32 with 10 rounds for
// counter ctr and key key (Random123's philox4x32_R(10, ctr, key)).
func Philox4x32(ctr [4]uint32, key [2]uint32) [4]uint32 {
	return philoxRounds(10, ctr, key)
}

// philoxRounds applies r Philox4x32 rounds; the key is bumped before every
// round after the first.
func philoxRounds(r int, c [4]uint32, k [2]uint32) [4]uint32 {
	for i := range r {
		if i > 0 {
			k[0] += philoxW0
			k[1] += philoxW1
		}
		hi0, lo0 := bits.Mul32(philoxM0, c[0])
		hi1, lo1 := bits.Mul32(philoxM1, c[2])
		c = [4]uint32{hi1 ^ c[1] ^ k[0], lo1, hi0 ^ c[3] ^ k[1], lo0}
	}
	return c
}

// PhiloxRange writes dst[b] = Philox4x32(counter, key) for the counters
// first+b in words 0 (low) and 1 (high) and upper in words 2 and 3: the
// blocks of len(dst) consecutive counters, eight or sixteen at a time on
// AVX-512, bit for bit what Philox4x32 gives each.
func PhiloxRange(dst [][4]uint32, first uint64, upper [2]uint32, key [2]uint32) {
	n := philoxRangeAsm(dst, first, upper, key)
	philoxRangeGo(dst[n:], first+uint64(n), upper, key)
}

// philoxRangeGo is PhiloxRange in Go, one block at a time with the rounds
// on four scalar words (the twin of the assembly).
func philoxRangeGo(dst [][4]uint32, first uint64, upper [2]uint32, key [2]uint32) {
	for b := range dst {
		c := first + uint64(b)
		c0, c1, c2, c3 := uint32(c), uint32(c>>32), upper[0], upper[1]
		k0, k1 := key[0], key[1]
		for range 10 {
			p0 := uint64(philoxM0) * uint64(c0)
			p1 := uint64(philoxM1) * uint64(c2)
			c0, c1, c2, c3 = uint32(p1>>32)^c1^k0, uint32(p1), uint32(p0>>32)^c3^k1, uint32(p0)
			k0 += philoxW0
			k1 += philoxW1
		}
		dst[b] = [4]uint32{c0, c1, c2, c3}
	}
}

// Uniform24 maps a random word to a float in [0, 1) using its top 24 bits,
// which a float32 represents exactly: (w >> 8) · 2⁻²⁴.
func Uniform24(w uint32) float32 {
	return float32(w>>8) * (1.0 / (1 << 24))
}

// PhiloxStream is the stream of 32-bit words of one seed: word at position
// pos is word pos%4 of Philox4x32(counter pos/4, key seed), the 64-bit block
// counter in counter words 0 (low) and 1 (high), words 2 and 3 zero, and the
// seed's low and high halves in key words 0 and 1. It caches the last block,
// so reading consecutive positions costs one Philox call per four words.
type PhiloxStream struct {
	key   [2]uint32
	block uint64
	words [4]uint32
	valid bool
}

// NewPhiloxStream returns the stream of seed.
func NewPhiloxStream(seed uint64) *PhiloxStream {
	return &PhiloxStream{key: [2]uint32{uint32(seed), uint32(seed >> 32)}}
}

// Word returns the word at position pos.
func (s *PhiloxStream) Word(pos uint64) uint32 {
	b := pos / 4
	if !s.valid || b != s.block {
		s.words = Philox4x32([4]uint32{uint32(b), uint32(b >> 32), 0, 0}, s.key)
		s.block, s.valid = b, true
	}
	return s.words[pos%4]
}

// Uniform returns the uniform float in [0, 1) at position pos.
func (s *PhiloxStream) Uniform(pos uint64) float32 { return Uniform24(s.Word(pos)) }
