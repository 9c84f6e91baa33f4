//go:build amd64 && !noasm && !amd64.v3

package kernels

import "math"

// philoxNormalAsm maps the leading blocks of PhiloxNormal in assembly and
// returns how many it mapped: a multiple of 8 on AVX-512, of 4 on AVX2, 0
// without either. It runs only where math.Log is the amd64 assembly and
// the compiler does not fuse math.Sincos's multiply-adds (below
// GOAMD64=v3), the operations philox_map_amd64.s repeats.
func philoxNormalAsm(dst []float64, blocks [][4]uint32, mean, std float64) int {
	switch {
	case CPU.AVX512 && len(blocks) >= 8:
		n := len(blocks) &^ 7
		philoxNormal8AVX512(&dst[0], &blocks[0], n/8, mean, std, &normalConsts)
		return n
	case CPU.AVX2FMA && len(blocks) >= 4:
		n := len(blocks) &^ 3
		philoxNormal4AVX2(&dst[0], &blocks[0], n/4, mean, std, &normalConsts)
		return n
	}
	return 0
}

// philoxNormal8AVX512 maps groups×8 blocks to dst (philox_map_amd64.s).
//
//go:noescape
func philoxNormal8AVX512(dst *float64, blocks *[4]uint32, groups int, mean, std float64, c *[normalConstCount][8]uint64)

// philoxNormal4AVX2 is philoxNormal8AVX512 for AVX2, groups×4 blocks.
//
//go:noescape
func philoxNormal4AVX2(dst *float64, blocks *[4]uint32, groups int, mean, std float64, c *[normalConstCount][8]uint64)

// normalConsts holds the assembly's constants, each in all eight lanes of
// a 64-byte row (offset 64·row), or a lane table. The polynomial
// coefficients are those of math.Log (FreeBSD's e_log.c) and math.Sincos
// (Cephes), by their bits.
var normalConsts = func() (c [normalConstCount][8]uint64) {
	rows := [...]uint64{
		math.Float64bits(1), math.Float64bits(2), math.Float64bits(0.5),
		math.Float64bits(7.07106781186547524401e-01),                                   // √2/2 of math.Log's assembly
		0x3FC2F112DF3E5244, 0x3FC7466496CB03DE, 0x3FD2492494229359, 0x3FE5555555555593, // L7 L5 L3 L1
		0x3FC39A09D078C69F, 0x3FCC71C51D8E78AF, 0x3FD999999997FA04, // L6 L4 L2
		0x3dea39ef35793c76, 0x3fe62e42fee00000, // Ln2Lo Ln2Hi
		math.Float64bits(-2), math.Float64bits(2 * math.Pi), math.Float64bits(4 / math.Pi),
		0x3fe921fb40000000, 0x3e64442d00000000, 0x3ce8469898cc5170, // π/4 in three parts
		0x3de5d8fd1fd19ccd, 0xbe5ae5e5a9291f5d, 0x3ec71de3567d48a1, // sin
		0xbf2a01a019bfdf03, 0x3f8111111110f7d0, 0xbfc5555555555548,
		0xbda8fa49a0861a9b, 0x3e21ee9d7b4e3f05, 0xbe927e4f7eac4bc6, // cos
		0x3efa01a019c844f5, 0xbf56c16c16c14f91, 0x3fa555555555554b,
		math.Float64bits(0x1p-53),
		0x000FFFFFFFFFFFFF, 0x3FE, 1, 4, 2, 1 << 63, // mantissa mask, exponent bias, bit tests, sign
	}
	for r, v := range rows {
		for l := range c[r] {
			c[r][l] = v
		}
	}
	for l := range 8 {
		c[normalTwo52][l] = math.Float64bits(0x1p52)
		c[normalTwo52+1][l] = math.Float64bits(1022)
		c[normalEven][l] = uint64(2 * l)               // words 0,1 of blocks 0–7
		c[normalEven+1][l] = uint64(2*l + 1)           // words 2,3
		c[normalEven+2][l] = uint64(l/2 + 8*(l%2))     // interleave, low half
		c[normalEven+3][l] = uint64(4 + l/2 + 8*(l%2)) // high half
	}
	return c
}()

// normalEven is the row of the first lane table, normalTwo52 that of 2⁵²
// and 1022 (float64, for the AVX2 path's exact integer conversions),
// normalConstCount the rows.
const (
	normalEven       = 38
	normalTwo52      = normalEven + 4
	normalConstCount = normalTwo52 + 2
)
