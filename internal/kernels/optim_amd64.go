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

// The F32 SGD loop of optim.go (sgdUpdateRun), likewise: 8 elements per
// ZMM or 4 per YMM; n is a positive multiple of 8 (AVX-512) or 4 (AVX2);
// buf is read unless c.first and written when c.hasBuf.

//go:noescape
func sgdF32AVX512(p, gr, buf *float32, n int, c *sgdScalars)

//go:noescape
func sgdF32AVX2(p, gr, buf *float32, n int, c *sgdScalars)
