//go:build !amd64 || noasm

package kernels

// Without the assembly CPU reports no features, so norm_half.go never
// calls these.

func vecSumBF16(s *uint16, n int, acc *[16]float64)                { panic("kernels: no assembly") }
func normSqDevBF16(x *uint16, n int, mu float64, acc *[16]float64) { panic("kernels: no assembly") }
func normAffineBF16(y, x *uint16, n int, scale, shift float64)     { panic("kernels: no assembly") }
func normAffineReluBF16(y, x *uint16, n int, scale, shift float64) { panic("kernels: no assembly") }
func normGradBF16(dx, dy, x *uint16, n int, mu, a, b, c float64)   { panic("kernels: no assembly") }
func normDotDevBF16(dy, x *uint16, n int, mu float64, a, ax *[8]float64) {
	panic("kernels: no assembly")
}

func vecSumBF16Z(s *uint16, n int, acc *[16]float64)                { panic("kernels: no assembly") }
func normSqDevBF16Z(x *uint16, n int, mu float64, acc *[16]float64) { panic("kernels: no assembly") }
func normAffineBF16Z(y, x *uint16, n int, scale, shift float64)     { panic("kernels: no assembly") }
func normAffineReluBF16Z(y, x *uint16, n int, scale, shift float64) { panic("kernels: no assembly") }
func normGradBF16Z(dx, dy, x *uint16, n int, mu, a, b, c float64)   { panic("kernels: no assembly") }
func normDotDevBF16Z(dy, x *uint16, n int, mu float64, a, ax *[8]float64) {
	panic("kernels: no assembly")
}
