//go:build amd64 && !noasm

package kernels

// i8Kernel6x16AVX2 is the AVX2 micro-kernel of GemmI8 (int8_amd64.s): one
// 6×16 int32 tile over kp ≥ 1 k-pairs of packed A (six rows lda values
// apart) and packed B, stored at c with row stride ldc elements, or added
// there when accumulate is set.
//
//go:noescape
func i8Kernel6x16AVX2(kp int, a *int16, lda int, b *int16, c *int32, ldc int, accumulate bool)

// i8PackBPairs interleaves rows r0 and r1 of B (one k-pair) for groups
// panels of 16 columns, widening to int16: 64 bytes per panel, panels
// stride bytes apart in dst.
//
//go:noescape
func i8PackBPairs(dst *int16, r0, r1 *int8, groups, stride int)

// i8Widen sign-extends n int8 values to int16; n is a positive multiple of
// 16.
//
//go:noescape
func i8Widen(dst *int16, src *int8, n int)

// i8DequantRow is one row of DequantI32 over n elements, a positive
// multiple of 8: out[j] = float32(in[j])·(sa·sb[j]) (+ bias[j]), where
// flags bit 0 says sb has a scale per column (else sb[0] serves all) and
// bit 1 that bias is present.
//
//go:noescape
func i8DequantRow(out *float32, in *int32, sb, bias *float32, sa float32, n, flags int)

// i8KernelQuadsVNNI is the AVX512-VNNI micro-kernel of the quads layout
// (int8_quad_amd64.s): one 12×16 int32 tile over kq ≥ 1 k-quads, minus
// corr[r] in row r, stored at c (row stride ldc) or added there.
//
//go:noescape
func i8KernelQuadsVNNI(kq int, a, b *byte, c *int32, ldc int, corr *int32, accumulate bool)

// i8KernelQuads6VNNI is i8KernelQuadsVNNI for the first six rows of the
// 12-row group only.
//
//go:noescape
func i8KernelQuads6VNNI(kq int, a, b *byte, c *int32, ldc int, corr *int32, accumulate bool)

// i8PackBQuads interleaves rows r0..r3 of B (one k-quad) for groups panels
// of 16 columns, adding 128: 64 bytes per panel, panels stride bytes
// apart in dst.
//
//go:noescape
func i8PackBQuads(dst *byte, r0, r1, r2, r3 *int8, groups, stride int)
