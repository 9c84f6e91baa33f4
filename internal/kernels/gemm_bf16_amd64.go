//go:build !noasm && amd64

package kernels

// sbgemmKernelAVX512BF16 computes one 12×32 float32 tile of C from
// bfloat16 pair panels with VDPBF16PS (see gemm_bf16_amd64.s), with the
// modes of sgemmKernelAVX512.
//
//go:noescape
func sbgemmKernelAVX512BF16(k int, a, b, c *float32, ldc int, beta float32, mode int)

// sbgemmKernelAVX512BF16Half is sbgemmKernelAVX512BF16 for the first six
// rows of the tile only.
//
//go:noescape
func sbgemmKernelAVX512BF16Half(k int, a, b, c *float32, ldc int, beta float32, mode int)

// sbgemmKernelAVX512BF16Narrow is sbgemmKernelAVX512BF16 for the first
// 16 columns of the tile only.
//
//go:noescape
func sbgemmKernelAVX512BF16Narrow(k int, a, b, c *float32, ldc int, beta float32, mode int)

// gemmStore12x32AVX512 is the tile store the 12×32 kernels jump to; it is
// never called from Go.
//
//go:noescape
func gemmStore12x32AVX512(k int, a, b, c *float32, ldc int, beta float32, mode int)

// gemmStore6x32AVX512 is the six-row tile store the six-row kernels jump
// to; it is never called from Go.
//
//go:noescape
func gemmStore6x32AVX512(k int, a, b, c *float32, ldc int, beta float32, mode int)

// sbgemmAVX512BF16 is the checked Go entry to the pair micro-kernel.
func sbgemmAVX512BF16(k int, a, b, c []float32, ldc int, beta float32, mode int) {
	checkPairTile(k, a, b, c, ldc, 12, 32)
	sbgemmKernelAVX512BF16(k, unsafeData(a), unsafeData(b), &c[0], ldc, beta, mode)
}

// checkPairTile panics unless a and b hold ⌈k/2⌉ pair groups of 12 and
// 32 words and c the tile's first rows rows and cols columns.
func checkPairTile(k int, a, b, c []float32, ldc, rows, cols int) {
	if kp := (k + 1) / 2; kp > 0 {
		_ = a[12*kp-1]
		_ = b[32*kp-1]
	}
	_ = c[(rows-1)*ldc+cols-1]
}

// sbgemmAVX512BF16Narrow is the checked Go entry to the 16-column pair
// kernel.
func sbgemmAVX512BF16Narrow(k int, a, b, c []float32, ldc int, beta float32, mode int) {
	checkPairTile(k, a, b, c, ldc, 12, 16)
	sbgemmKernelAVX512BF16Narrow(k, unsafeData(a), unsafeData(b), &c[0], ldc, beta, mode)
}

// sbgemmAVX512BF16Half is the checked Go entry to the six-row pair
// kernel.
func sbgemmAVX512BF16Half(k int, a, b, c []float32, ldc int, beta float32, mode int) {
	checkPairTile(k, a, b, c, ldc, 6, 32)
	sbgemmKernelAVX512BF16Half(k, unsafeData(a), unsafeData(b), &c[0], ldc, beta, mode)
}

// sbgemmAVX512BF16Kernel is the bfloat16 pair kernel: the float32
// AVX-512 kernel's 12×32 tile and blocking, with kc doubled (a pair panel
// of kc depth is the size of a float32 panel of kc/2), with a six-row
// kernel for edge tiles of at most six rows and a 16-column one for edge
// tiles of at most 16 columns (a product with N = 16, as the 4×4 layers
// of a CIFAR ResNet have, ran in the same time as N = 32 before it).
var sbgemmAVX512BF16Kernel = gemmKernel[float32]{name: "avx512bf16-12x32", mr: 12, nr: 32, mc: 240, kc: 384, nc: 2048,
	full: sbgemmAVX512BF16, half: sbgemmAVX512BF16Half, narrow: sbgemmAVX512BF16Narrow, pairs: true}

// selectSbgemm returns the bfloat16 pair kernel when this CPU has
// AVX512_BF16, else nil.
func selectSbgemm() *gemmKernel[float32] {
	if CPU.AVX512BF16 {
		return &sbgemmAVX512BF16Kernel
	}
	return nil
}
