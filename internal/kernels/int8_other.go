//go:build !amd64 || noasm

package kernels

// Without the assembly CPU reports no features, so these are never
// called.

func i8Kernel6x16AVX2(kp int, a *int16, lda int, b *int16, c *int32, ldc int, accumulate bool) {
	panic("kernels: no assembly")
}

func i8PackBPairs(dst *int16, r0, r1 *int8, groups, stride int) { panic("kernels: no assembly") }

func i8Widen(dst *int16, src *int8, n int) { panic("kernels: no assembly") }

func i8DequantRow(out *float32, in *int32, sb, bias *float32, sa float32, n, flags int) {
	panic("kernels: no assembly")
}

func i8KernelQuadsVNNI(kq int, a, b *byte, c *int32, ldc int, corr *int32, accumulate bool) {
	panic("kernels: no assembly")
}

func i8PackBQuads(dst *byte, r0, r1, r2, r3 *int8, groups, stride int) { panic("kernels: no assembly") }

func i8KernelQuads6VNNI(kq int, a, b *byte, c *int32, ldc int, corr *int32, accumulate bool) {
	panic("kernels: no assembly")
}
