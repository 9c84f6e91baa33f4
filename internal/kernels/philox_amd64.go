//go:build amd64 && !noasm

package kernels

// philoxRangeAsm computes the leading blocks of PhiloxRange in assembly
// and returns how many it wrote: a multiple of 16 on AVX-512, of 8 on
// AVX2, 0 without either.
func philoxRangeAsm(dst [][4]uint32, first uint64, upper [2]uint32, key [2]uint32) int {
	switch {
	case CPU.AVX512 && len(dst) >= 16:
		n := len(dst) &^ 15
		philoxBlocks16AVX512(&dst[0], n/16, first, upper[0], upper[1], key[0], key[1])
		return n
	case CPU.AVX2FMA && len(dst) >= 8:
		n := len(dst) &^ 7
		philoxBlocks8AVX2(&dst[0], n/8, first, upper[0], upper[1], key[0], key[1])
		return n
	}
	return 0
}

// philoxBlocks16AVX512 writes groups×16 blocks of consecutive counters
// from first, counter words 2 and 3 u0 and u1 and key (k0, k1), to dst
// (philox_amd64.s).
//
//go:noescape
func philoxBlocks16AVX512(dst *[4]uint32, groups int, first uint64, u0, u1, k0, k1 uint32)

// philoxBlocks8AVX2 is philoxBlocks16AVX512 for AVX2, groups×8 blocks.
//
//go:noescape
func philoxBlocks8AVX2(dst *[4]uint32, groups int, first uint64, u0, u1, k0, k1 uint32)
