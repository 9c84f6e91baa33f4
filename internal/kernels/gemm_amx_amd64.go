//go:build !noasm && amd64

package kernels

import "unsafe"

// amxKernelBF16 computes one 32×32 float32 tile of C from AMX panels with
// TDPBF16PS (see gemm_amx_amd64.s): kb 16-pair steps, modes as amxGo,
// tmp a 32×32 scratch for mode 2; A row r of step s is the 64 bytes at
// a + s·astep + r·astride.
//
//go:noescape
func amxKernelBF16(kb int, a, b, c unsafe.Pointer, ldc int, tmp *float32, beta float32, mode int, astride, astep int)

// The A strides of a packed AMX panel: 64 bytes between rows, 2048
// between steps.
const amxRowBytes, amxStepBytes = 64, 2048

// amxBF16 is the checked Go entry to the AMX micro-kernel.
func amxBF16(k int, a, b, c []float32, ldc int, beta float32, mode int) {
	kb := amxSteps(k)
	_ = a[512*kb-1]
	_ = b[512*kb-1]
	_ = c[31*ldc+31]
	amxCall(kb, unsafe.Pointer(&a[0]), amxRowBytes, amxStepBytes, b, c, ldc, beta, mode)
}

// amxBF16At is amxBF16 with the 32 rows of A read in place from bfloat16
// bits (the kernel's fullAt): row r's depth p at h[at + r·ld + p], k a
// multiple of 32.
func amxBF16At(k int, h []uint16, at, ld int, b, c []float32, ldc int, beta float32, mode int) {
	if k%32 != 0 {
		panic("kernels: amxBF16At depth not a multiple of 32")
	}
	kb := k / 32
	_ = h[at+31*ld+k-1]
	_ = b[512*kb-1]
	_ = c[31*ldc+31]
	amxCall(kb, unsafe.Pointer(&h[at]), 2*ld, 64, b, c, ldc, beta, mode)
}

// amxBF16Bias is the kernel's fullBias: the tile's sums start from the
// 32 values of bias in every row (as mode 1 from C holding bias in each
// row), C = that sum; A read in place from h at at (row distance ld) when
// h is not nil, else from the packed panel a.
func amxBF16Bias(k int, h []uint16, at, ld int, a, b, bias, c []float32, ldc int) {
	kb := amxSteps(k)
	_ = bias[31]
	_ = b[512*kb-1]
	_ = c[31*ldc+31]
	p, astride, astep := unsafe.Pointer(nil), amxRowBytes, amxStepBytes
	if h != nil {
		if k%32 != 0 {
			panic("kernels: amxBF16Bias depth not a multiple of 32")
		}
		_ = h[at+31*ld+k-1]
		p, astride, astep = unsafe.Pointer(&h[at]), 2*ld, 64
	} else {
		_ = a[512*kb-1]
		p = unsafe.Pointer(&a[0])
	}
	amxKernelBF16(kb, p, unsafe.Pointer(&b[0]), unsafe.Pointer(&c[0]), ldc, &bias[0], 0, 3, astride, astep)
}

// amxCall runs the kernel, with the tile scratch of mode 2 on the stack
// (4 KiB) only in that mode.
func amxCall(kb int, a unsafe.Pointer, astride, astep int, b, c []float32, ldc int, beta float32, mode int) {
	if mode == 2 {
		amxCallBeta(kb, a, astride, astep, b, c, ldc, beta)
		return
	}
	amxKernelBF16(kb, a, unsafe.Pointer(&b[0]), unsafe.Pointer(&c[0]), ldc, nil, beta, mode, astride, astep)
}

// amxCallBeta is amxCall in mode 2.
func amxCallBeta(kb int, a unsafe.Pointer, astride, astep int, b, c []float32, ldc int, beta float32) {
	var tmp [32 * 32]float32
	amxKernelBF16(kb, a, unsafe.Pointer(&b[0]), unsafe.Pointer(&c[0]), ldc, &tmp[0], beta, 2, astride, astep)
}

// amxBF16Kernel is the AMX kernel and its blocking: a 32×32 tile, a B
// panel of kc·32 bfloat16 values (24 KiB at kc 384) kept in L1 while an
// A block of mc·kc values (192 KiB) streams from L2.
var amxBF16Kernel = gemmKernel[float32]{name: "amx-bf16-32x32", mr: 32, nr: 32, mc: 256, kc: 384, nc: 2048,
	full: amxBF16, fullAt: amxBF16At, fullBias: amxBF16Bias, pairs: true, amx: true}

// selectAMX returns the AMX kernel when this CPU and OS allow it, else
// nil.
func selectAMX() *gemmKernel[float32] {
	if CPU.AMXBF16 {
		return &amxBF16Kernel
	}
	return nil
}

// amxStepColsAVX512 packs one whole step of an AMX A panel from Aᵀ in
// AVX-512 (see gemm_amx_amd64.s; amxStepCols is its twin).
//
//go:noescape
func amxStepColsAVX512(blk *uint32, h *uint16, ld int)

// amxStepColsFast is amxStepCols in assembly where the CPU has AVX-512;
// the caller has checked that the step's 32 depth runs lie in h.
func amxStepColsFast(blk *[512]uint32, h []uint16, at, ld int) bool {
	if !CPU.AVX512 {
		return false
	}
	_ = h[at+31*ld+31]
	amxStepColsAVX512(&blk[0], &h[at], ld)
	return true
}
