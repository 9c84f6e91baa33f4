//go:build amd64 && !noasm

package kernels

// The bfloat16 loops of norm_half.go, in norm_half_amd64.s; see there for n.

//go:noescape
func vecSumBF16(s *uint16, n int, acc *[16]float64)

//go:noescape
func normSqDevBF16(x *uint16, n int, mu float64, acc *[16]float64)

//go:noescape
func normDotDevBF16(dy, x *uint16, n int, mu float64, a, ax *[8]float64)

//go:noescape
func normAffineBF16(y, x *uint16, n int, scale, shift float64)

//go:noescape
func normAffineReluBF16(y, x *uint16, n int, scale, shift float64)

//go:noescape
func normGradBF16(dx, dy, x *uint16, n int, mu, a, b, c float64)

// The AVX-512 twins of the loops above (norm_half_amd64.s), for the same
// bits eight float64 lanes at a time; n is a positive multiple of 16.

//go:noescape
func vecSumBF16Z(s *uint16, n int, acc *[16]float64)

//go:noescape
func normSqDevBF16Z(x *uint16, n int, mu float64, acc *[16]float64)

//go:noescape
func normDotDevBF16Z(dy, x *uint16, n int, mu float64, a, ax *[8]float64)

//go:noescape
func normAffineBF16Z(y, x *uint16, n int, scale, shift float64)

//go:noescape
func normAffineReluBF16Z(y, x *uint16, n int, scale, shift float64)

//go:noescape
func normGradBF16Z(dx, dy, x *uint16, n int, mu, a, b, c float64)
