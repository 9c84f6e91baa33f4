//go:build !noasm && amd64

package kernels

// narrowTile32AVX512 narrows rows rows of 32 float32, lds apart, to
// bfloat16 rows ldo apart (see gemm_half_out_amd64.s; f32ToBF16 row by
// row is its twin).
//
//go:noescape
func narrowTile32AVX512(out *uint16, src *float32, ldo, lds, rows int)

// narrowTileFast is narrowTileFrom in one assembly call for tiles 32
// wide where the CPU has AVX-512; false when it did nothing.
func narrowTileFast(out []uint16, ldo int, src []float32, lds, rows, cols int) bool {
	if cols != 32 || rows < 1 || !CPU.AVX512 {
		return false
	}
	_, _ = out[(rows-1)*ldo+31], src[(rows-1)*lds+31]
	narrowTile32AVX512(&out[0], &src[0], ldo, lds, rows)
	return true
}
