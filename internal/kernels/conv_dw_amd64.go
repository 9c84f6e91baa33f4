//go:build !noasm && amd64

package kernels

// dwPackAVX512 is dwPackGo in assembly (conv_dw_amd64.s); hi nil packs
// zero high halves.
//
//go:noescape
func dwPackAVX512(dst *uint32, step, width int, lo, hi *uint16, plane, rows, n int)

// dwPack writes dst[j·step + c] = lo[c·plane + j] | hi[c·plane + j]<<16
// for pixels j < n and channels c < width: zero from c = rows on, and zero
// high halves when hi is nil. In assembly on AVX-512, else dwPackGo.
func dwPack(dst []uint32, step, width int, lo, hi []uint16, plane, rows, n int) {
	if !CPU.AVX512 || n == 0 {
		dwPackGo(dst, step, width, lo, hi, plane, rows, n)
		return
	}
	_ = dst[(n-1)*step+width-1]
	var pl, ph *uint16
	if rows > 0 {
		_ = lo[(rows-1)*plane+n-1]
		pl = &lo[0]
		if hi != nil {
			_ = hi[(rows-1)*plane+n-1]
			ph = &hi[0]
		}
	}
	dwPackAVX512(&dst[0], step, width, pl, ph, plane, rows, n)
}
