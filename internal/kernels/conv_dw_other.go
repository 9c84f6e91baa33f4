//go:build noasm || !amd64

package kernels

// dwPack is dwPackGo: without assembly there is no other.
func dwPack(dst []uint32, step, width int, lo, hi []uint16, plane, rows, n int) {
	dwPackGo(dst, step, width, lo, hi, plane, rows, n)
}
