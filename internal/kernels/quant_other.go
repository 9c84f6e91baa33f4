//go:build !amd64 || noasm

package kernels

// Without the assembly CPU reports no features, so these are never
// called.

func qAbsMaxAVX2(src *float32, n int) uint32 { panic("kernels: no assembly") }

func qQuantizeAVX2(dst *int8, src *float32, n int, inv float32) { panic("kernels: no assembly") }

func qDequantBiasAVX2(out *float32, in *int32, n int, s, b float32, relu bool) {
	panic("kernels: no assembly")
}
