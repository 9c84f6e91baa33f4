//go:build !amd64 || noasm

package kernels

// Without the assembly CPU reports no features, so conv_col.go never
// calls these.

func convGather2RowsF32(dst, src *float32, rows, n, dstStep, srcStep, blocks int) {
	panic("kernels: no assembly")
}

func convGather2RowsU16(dst, src *uint16, rows, n, dstStep, srcStep, blocks int) {
	panic("kernels: no assembly")
}

func convScatter2AddRowsF32(dst, src *float32, rows, n, dstStep, srcStep, blocks int) {
	panic("kernels: no assembly")
}

func im2colPermAVX512(dst *uint16, ld int, x *uint16, xs, ns, nbs, t0, t1 int, t *convPerm) {
	panic("kernels: no assembly")
}

func col2imPermAVX512(dx, col *float32, ld, rs, quarters, wide int, t *convUnperm) {
	panic("kernels: no assembly")
}

func im2colPermF32AVX512(dst *float32, ld int, x *float32, xs, ns, nbs, t0, t1 int, t *convUnperm) {
	panic("kernels: no assembly")
}
