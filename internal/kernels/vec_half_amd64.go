//go:build amd64 && !noasm

package kernels

// The AVX2 loops of vec_half.go, in vec_half_amd64.s. n is a positive
// multiple of 8 (the bfloat16 arithmetic) or 16 (the ReLUs).

//go:noescape
func vecAddBF16(d, a, b *uint16, n int)

//go:noescape
func vecSubBF16(d, a, b *uint16, n int)

//go:noescape
func vecMulBF16(d, a, b *uint16, n int)

//go:noescape
func vecRelu16(d, s *uint16, n int, lim int)

//go:noescape
func vecReluGrad16(dx, dy, y *uint16, n int, lim, quiet int)

//go:noescape
func vecAxpyBF16(y, x *uint16, alpha float32, n int)

//go:noescape
func accBF16F64(acc *float64, h *uint16, n int)
