//go:build amd64 && !noasm

package kernels

// The AVX2 loops of fastmath.go, in fastmath_amd64.s. n is a positive
// multiple of 8 and every pointer addresses at least n elements.

//go:noescape
func expShiftF32(d, s *float32, n int, shift float32, acc *[8]float64)

//go:noescape
func tanhF32(d, s *float32, n int)

//go:noescape
func sigmoidF32(d, s *float32, n int)

//go:noescape
func geluTanhF32(d, s *float32, n int)

//go:noescape
func geluTanhGradF32(dx, dy, x *float32, n int)

//go:noescape
func expRowsF32(s *float32, ld, rows int, lens *int, shift *float32, sums *float64)

//go:noescape
func maxRowsF32(s *float32, ld, rows int, lens *int, out *float32)

//go:noescape
func dsRowsF32(dp, p *float32, ld, rows, n int, delta *float32)
