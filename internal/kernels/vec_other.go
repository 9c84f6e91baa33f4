//go:build !amd64 || noasm

package kernels

// Without the assembly CPU reports no features, so vec.go never calls
// these.

func vecAddF32(d, a, b *float32, n int)               { panic("kernels: no assembly") }
func vecSubF32(d, a, b *float32, n int)               { panic("kernels: no assembly") }
func vecMulF32(d, a, b *float32, n int)               { panic("kernels: no assembly") }
func vecAxpyF32(y, x *float32, alpha float32, n int)  { panic("kernels: no assembly") }
func vecScaleF32(d, s *float32, alpha float32, n int) { panic("kernels: no assembly") }
func vecReluF32(d, s *float32, n int)                 { panic("kernels: no assembly") }
func vecReluGradF32(dx, dy, y *float32, n int)        { panic("kernels: no assembly") }
func vecFill32B(b *byte, pat *[32]byte, n int)        { panic("kernels: no assembly") }
func vecSumF32(s *float32, n int, acc *[16]float64)   { panic("kernels: no assembly") }
func vecSumF64(s *float64, n int, acc *[16]float64)   { panic("kernels: no assembly") }

func vecAddF32NT(d, a, b *float32, n int)               { panic("kernels: no assembly") }
func vecSubF32NT(d, a, b *float32, n int)               { panic("kernels: no assembly") }
func vecMulF32NT(d, a, b *float32, n int)               { panic("kernels: no assembly") }
func vecScaleF32NT(d, s *float32, alpha float32, n int) { panic("kernels: no assembly") }
func vecReluF32NT(d, s *float32, n int)                 { panic("kernels: no assembly") }
func vecReluGradF32NT(dx, dy, y *float32, n int)        { panic("kernels: no assembly") }
func vecFill32BNT(b *byte, pat *[32]byte, n int)        { panic("kernels: no assembly") }
