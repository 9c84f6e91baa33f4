//go:build amd64 && !noasm

package kernels

//go:generate go run fastmath_avx512_gen.go

// The AVX-512 loops of fastmath.go, in fastmath_avx512_amd64.s (written by
// fastmath_avx512_gen.go): the AVX2 loops' operations on 16 lanes, four
// vectors in flight. n is any length ≥ 0 (the last 1–63 elements are read
// and written under masks) and every pointer addresses at least n
// elements; expRowsF32AVX512 takes expRowsF32's row lengths (multiples of
// 8).

//go:noescape
func expShiftF32AVX512(d, s *float32, n int, shift float32, acc *[8]float64)

//go:noescape
func tanhF32AVX512(d, s *float32, n int)

//go:noescape
func sigmoidF32AVX512(d, s *float32, n int)

//go:noescape
func geluTanhF32AVX512(d, s *float32, n int)

//go:noescape
func geluTanhGradF32AVX512(dx, dy, x *float32, n int)

//go:noescape
func expRowsF32AVX512(s *float32, ld, rows int, lens *int, shift *float32, sums *float64)
