//go:build !amd64 || noasm

package kernels

// Without the assembly CPU reports no features, so norm.go never calls
// these.

func normSqDevF32(x *float32, n int, mu float64, acc *[16]float64) { panic("kernels: no assembly") }
func normDotDevF32(dy, x *float32, n int, mu float64, a, ax *[8]float64) {
	panic("kernels: no assembly")
}
func normAffineF32(y, x *float32, n int, scale, shift float64)   { panic("kernels: no assembly") }
func normGradF32(dx, dy, x *float32, n int, mu, a, b, c float64) { panic("kernels: no assembly") }
func lnGradSumsF32(dy, x, w *float32, aw, ab *float64, n int, mu, is float64, sg, sgx *[16]float64) {
	panic("kernels: no assembly")
}
func lnGradDxF32(dx, dy, x, w *float32, n int, mu, is, mg, mgx float64) {
	panic("kernels: no assembly")
}
func lnRowF32(y, x, w, b *float32, n int, mu, is float64) { panic("kernels: no assembly") }
