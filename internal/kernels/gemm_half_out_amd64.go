//go:build !noasm && amd64

package kernels

// narrowTile32AVX512 narrows rows rows of 32 float32, ld apart, to
// bfloat16 at the same offsets (see gemm_half_out_amd64.s; f32ToBF16 row
// by row is its twin).
//
//go:noescape
func narrowTile32AVX512(out *uint16, c *float32, ld, rows int)

// narrowTileFast is narrowTile in one assembly call for tiles 32 wide
// where the CPU has AVX-512; false when it did nothing.
func narrowTileFast(out []uint16, c []float32, at, ldc, rows, cols int) bool {
	if cols != 32 || rows < 1 || !CPU.AVX512 {
		return false
	}
	end := at + (rows-1)*ldc + 31
	_, _ = out[end], c[end]
	narrowTile32AVX512(&out[at], &c[at], ldc, rows)
	return true
}
