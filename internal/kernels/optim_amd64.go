//go:build amd64 && !noasm

package kernels

// The F32 Adam loop of optim.go in optim_amd64.s: adamUpdateRun's arithmetic,
// in float64, operation for operation, 8 elements per ZMM (AVX-512) or 4
// per YMM (AVX2). n is a positive multiple of 16 (AVX-512) or 8 (AVX2);
// every pointer addresses at least n elements.

//go:noescape
func adamF32AVX512(p, gr, m, v *float32, n int, c *adamScalars)

//go:noescape
func adamF32AVX2(p, gr, m, v *float32, n int, c *adamScalars)
