//go:build amd64 && !noasm

package kernels

// The AVX2 Winograd transforms of eight tiles (conv_wino_amd64.s), for
// i ≤ 24: winoInput8AVX2 reads src[r·ld : r·ld+18] for r < 4,
// winoOutput8AVX2 writes dst[r·ld : r·ld+16] for r < 2.

//go:noescape
func winoInput8AVX2(blk *winoPanel, i int, src *float32, ld int)

//go:noescape
func winoOutput8AVX2(blk *winoPanel, i int, dst *float32, ld int)

// winoAsm says whether the transforms run the assembly.
var winoAsm = CPU.AVX2FMA
