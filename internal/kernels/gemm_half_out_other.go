//go:build noasm || !amd64

package kernels

// narrowTileFast: no assembly here; narrowTile goes row by row.
func narrowTileFast(out []uint16, c []float32, at, ldc, rows, cols int) bool { return false }
