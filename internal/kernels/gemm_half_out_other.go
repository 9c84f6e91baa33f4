//go:build noasm || !amd64

package kernels

// narrowTileFast: no assembly here; narrowTile goes row by row.
func narrowTileFast(out []uint16, ldo int, src []float32, lds, rows, cols int) bool { return false }
