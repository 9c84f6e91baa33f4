//go:build !amd64 || noasm

package kernels

// Without the assembly CPU reports no features, so optim.go never calls
// these.

func adamF32AVX512(p, gr, m, v *float32, n int, c *adamScalars) { panic("kernels: no assembly") }
func adamF32AVX2(p, gr, m, v *float32, n int, c *adamScalars)   { panic("kernels: no assembly") }
func sgdF32AVX512(p, gr, buf *float32, n int, c *sgdScalars)    { panic("kernels: no assembly") }
func sgdF32AVX2(p, gr, buf *float32, n int, c *sgdScalars)      { panic("kernels: no assembly") }
