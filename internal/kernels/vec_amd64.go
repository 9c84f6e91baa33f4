//go:build amd64 && !noasm

package kernels

// The AVX2 loops of vec.go, in vec_amd64.s. n counts elements (bytes for
// vecFill32B) and is a positive multiple of 8 (16 for the sums, 32 for the
// fill); every pointer addresses at least n elements. The NT variants
// store with non-temporal (cache-bypassing) stores and need their output
// pointer 32-byte aligned.

//go:noescape
func vecAddF32(d, a, b *float32, n int)

//go:noescape
func vecSubF32(d, a, b *float32, n int)

//go:noescape
func vecMulF32(d, a, b *float32, n int)

//go:noescape
func vecAxpyF32(y, x *float32, alpha float32, n int)

//go:noescape
func vecScaleF32(d, s *float32, alpha float32, n int)

//go:noescape
func vecReluF32(d, s *float32, n int)

//go:noescape
func vecReluGradF32(dx, dy, y *float32, n int)

//go:noescape
func vecFill32B(b *byte, pat *[32]byte, n int)

//go:noescape
func vecSumF32(s *float32, n int, acc *[16]float64)

//go:noescape
func vecSumF64(s *float64, n int, acc *[16]float64)

//go:noescape
func vecAddF32NT(d, a, b *float32, n int)

//go:noescape
func vecSubF32NT(d, a, b *float32, n int)

//go:noescape
func vecMulF32NT(d, a, b *float32, n int)

//go:noescape
func vecScaleF32NT(d, s *float32, alpha float32, n int)

//go:noescape
func vecReluF32NT(d, s *float32, n int)

//go:noescape
func vecReluGradF32NT(dx, dy, y *float32, n int)

//go:noescape
func vecFill32BNT(b *byte, pat *[32]byte, n int)
