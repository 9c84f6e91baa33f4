//go:build !amd64 || noasm

package kernels

// Without the assembly CPU reports no features, so fastmath.go never calls
// these.

func expShiftF32(d, s *float32, n int, shift float32, acc *[8]float64) {
	panic("kernels: no assembly")
}
func tanhF32(d, s *float32, n int)              { panic("kernels: no assembly") }
func sigmoidF32(d, s *float32, n int)           { panic("kernels: no assembly") }
func geluTanhF32(d, s *float32, n int)          { panic("kernels: no assembly") }
func geluTanhGradF32(dx, dy, x *float32, n int) { panic("kernels: no assembly") }
func expRowsF32(s *float32, ld, rows int, lens *int, shift *float32, sums *float64) {
	panic("kernels: no assembly")
}
func maxRowsF32(s *float32, ld, rows int, lens *int, out *float32) { panic("kernels: no assembly") }
func dsRowsF32(dp, p *float32, ld, rows, n int, delta *float32)    { panic("kernels: no assembly") }

func expShiftF32AVX512(d, s *float32, n int, shift float32, acc *[8]float64) {
	panic("kernels: no assembly")
}
func tanhF32AVX512(d, s *float32, n int)              { panic("kernels: no assembly") }
func sigmoidF32AVX512(d, s *float32, n int)           { panic("kernels: no assembly") }
func geluTanhF32AVX512(d, s *float32, n int)          { panic("kernels: no assembly") }
func geluTanhGradF32AVX512(dx, dy, x *float32, n int) { panic("kernels: no assembly") }
func expRowsF32AVX512(s *float32, ld, rows int, lens *int, shift *float32, sums *float64) {
	panic("kernels: no assembly")
}
