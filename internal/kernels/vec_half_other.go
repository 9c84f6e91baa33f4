//go:build !amd64 || noasm

package kernels

// Without the assembly CPU reports no features, so vec_half.go never
// calls these.

func vecAddBF16(d, a, b *uint16, n int)                      { panic("kernels: no assembly") }
func vecSubBF16(d, a, b *uint16, n int)                      { panic("kernels: no assembly") }
func vecMulBF16(d, a, b *uint16, n int)                      { panic("kernels: no assembly") }
func vecRelu16(d, s *uint16, n int, lim int)                 { panic("kernels: no assembly") }
func vecReluGrad16(dx, dy, y *uint16, n int, lim, quiet int) { panic("kernels: no assembly") }

func vecAxpyBF16(y, x *uint16, alpha float32, n int) { panic("kernels: no assembly") }

func accBF16F64(acc *float64, h *uint16, n int) { panic("kernels: no assembly") }
