//go:build !noasm && amd64

package kernels

// sgemmKernelAVX2 computes one 6×16 tile of C from packed panels (see
// gemm_amd64.s): mode 0 stores A·B, mode 1 adds it, mode 2 stores
// A·B + beta·C.
//
//go:noescape
func sgemmKernelAVX2(k int, a, b, c *float32, ldc int, beta float32, mode int)

// sgemmAVX2 is the checked Go entry to the assembly micro-kernel: it proves
// the panels and the C tile are in bounds before handing out raw pointers.
func sgemmAVX2(k int, a, b, c []float32, ldc int, beta float32, mode int) {
	if k > 0 {
		_ = a[6*k-1]
		_ = b[16*k-1]
	}
	_ = c[5*ldc+15]
	sgemmKernelAVX2(k, unsafeData(a), unsafeData(b), &c[0], ldc, beta, mode)
}

// sgemmKernelAVX512 computes one 12×32 tile of C from packed panels (see
// gemm_avx512_amd64.s), with the modes of sgemmKernelAVX2.
//
//go:noescape
func sgemmKernelAVX512(k int, a, b, c *float32, ldc int, beta float32, mode int)

// sgemmKernelAVX512Half is sgemmKernelAVX512 for the first six rows of
// the tile only.
//
//go:noescape
func sgemmKernelAVX512Half(k int, a, b, c *float32, ldc int, beta float32, mode int)

//go:noescape
func sgemmCopyRows16AVX2(dst, src *float32, ld, k int)

//go:noescape
func sgemmPackA6AVX2(dst, src *float32, ld, k int, alpha float32)

//go:noescape
func sgemmPackBT16AVX2(dst, src *float32, ld, k int)

//go:noescape
func sgemmPackAT6AVX2(dst, src *float32, ld, k int, alpha float32)

// sgemmPackAT6 copies k rows of 6 floats, ld apart from src[at:], into dst
// as k groups of 6 times alpha.
func sgemmPackAT6(dst, src []float32, at, ld, k int, alpha float32) {
	if k == 0 {
		return
	}
	_ = dst[6*k-1]
	_ = src[at+(k-1)*ld+5]
	sgemmPackAT6AVX2(&dst[0], &src[at], ld, k, alpha)
}

// sgemmCopyRows16 copies k rows of 16 floats, ld apart from src[at:], into
// dst as k groups of 16.
func sgemmCopyRows16(dst, src []float32, at, ld, k int) {
	if k == 0 {
		return
	}
	_ = dst[16*k-1]
	_ = src[at+(k-1)*ld+15]
	sgemmCopyRows16AVX2(&dst[0], &src[at], ld, k)
}

// sgemmPackA6 turns 6 rows of k floats, ld apart from src[at:], into k
// groups of 6 times alpha: whole blocks of 8 in assembly, the rest in Go.
func sgemmPackA6(dst, src []float32, at, ld, k int, alpha float32) {
	k8 := k &^ 7
	if k8 > 0 {
		_ = dst[6*k8-1]
		_ = src[at+5*ld+k8-1]
		sgemmPackA6AVX2(&dst[0], &src[at], ld, k8, alpha)
	}
	if k8 < k {
		packRows6(dst[6*k8:], src, at+k8, ld, k-k8, alpha)
	}
}

// sgemmPackBT16 turns 16 runs of k floats, ld apart from src[at:], into k
// groups of 16: whole blocks of 8 in assembly, the rest in Go.
func sgemmPackBT16(dst, src []float32, at, ld, k int) {
	k8 := k &^ 7
	if k8 > 0 {
		_ = dst[16*k8-1]
		_ = src[at+15*ld+k8-1]
		sgemmPackBT16AVX2(&dst[0], &src[at], ld, k8)
	}
	if k8 < k {
		packCols16(dst[16*k8:], src, at+k8, ld, k-k8)
	}
}

func unsafeData(s []float32) *float32 {
	if len(s) == 0 {
		return nil
	}
	return &s[0]
}

// sgemmAVX2Kernel is the AVX2+FMA kernel: 6×16 tiles in 12 YMM
// accumulators, assembly packers for whole panels.
var sgemmAVX2Kernel = gemmKernel[float32]{name: "avx2-6x16", mr: 6, nr: 16, mc: 144, kc: 256, nc: 2048,
	full: sgemmAVX2, packA: sgemmPackA6, packAT: sgemmPackAT6, packB: sgemmCopyRows16, packBT: sgemmPackBT16}

// sgemmAVX512Kernel is the AVX-512 kernel: 12×32 tiles in 24 ZMM
// accumulators, with Go packers of whole panels. Block
// sizes: a kc×32 B micro-panel of 24 KiB stays in a 32 or 48 KiB L1 beside
// the A micro-panel it meets (9 KiB); the mc×kc A block is 180 KiB of L2.
var sgemmAVX512Kernel = gemmKernel[float32]{name: "avx512-12x32", mr: 12, nr: 32, mc: 240, kc: 192, nc: 2048,
	full: sgemmAVX512, half: sgemmAVX512Half, packA: packRows12[float32], packBT: packCols32[float32]}

// sgemmAVX512Half is the checked Go entry to the six-row AVX-512 kernel.
func sgemmAVX512Half(k int, a, b, c []float32, ldc int, beta float32, mode int) {
	if k > 0 {
		_ = a[12*k-1]
		_ = b[32*k-1]
	}
	_ = c[5*ldc+31]
	sgemmKernelAVX512Half(k, unsafeData(a), unsafeData(b), &c[0], ldc, beta, mode)
}

// sgemmAVX512 is the checked Go entry to the AVX-512 micro-kernel.
func sgemmAVX512(k int, a, b, c []float32, ldc int, beta float32, mode int) {
	if k > 0 {
		_ = a[12*k-1]
		_ = b[32*k-1]
	}
	_ = c[11*ldc+31]
	sgemmKernelAVX512(k, unsafeData(a), unsafeData(b), &c[0], ldc, beta, mode)
}

// sgemmAsmKernels lists the assembly float32 kernels this CPU can run,
// widest first, or says why there are none. Each is tested against the Go
// micro-kernel of its shape and through the whole driver.
func sgemmAsmKernels() ([]gemmKernel[float32], string) {
	if !CPU.AVX2FMA {
		return nil, "this CPU lacks AVX2+FMA"
	}
	if CPU.AVX512 {
		return []gemmKernel[float32]{sgemmAVX512Kernel, sgemmAVX2Kernel}, ""
	}
	return []gemmKernel[float32]{sgemmAVX2Kernel}, ""
}

// selectSgemm picks the float32 kernel for this CPU: the widest assembly
// one, else the Go one.
func selectSgemm() gemmKernel[float32] {
	if ks, _ := sgemmAsmKernels(); len(ks) > 0 {
		return ks[0]
	}
	return sgemmGoKernel
}
