//go:build !noasm && amd64

package kernels

import "fmt"

// sgemmTilesAVX2 computes a run of n whole 6×16 tiles of C from packed
// panels (see gemm_amd64.s): tile i from the A panel at a + i·astep and
// the B panel at b + i·bstep into C at c + i·cstep (steps in bytes), each
// as a lone tile: mode 0 stores A·B, mode 1 adds it, mode 2 stores
// A·B + beta·C.
//
//go:noescape
func sgemmTilesAVX2(n, k int, a *float32, astep int, b *float32, bstep int, c *float32, ldc, cstep int, beta float32, mode int)

// sgemmAVX2 is the checked Go entry to the assembly micro-kernel (full), a
// run of one tile: it proves the panels and the C tile are in bounds
// before handing out raw pointers.
func sgemmAVX2(k int, a, b, c []float32, ldc int, beta float32, mode int) {
	if k > 0 {
		_ = a[6*k-1]
		_ = b[16*k-1]
	}
	_ = c[5*ldc+15]
	sgemmTilesAVX2(1, k, unsafeData(a), 0, unsafeData(b), 0, &c[0], ldc, 0, beta, mode)
}

// sgemmAVX2Tiles is the AVX2 kernel's tiles: the checked entry to
// sgemmTilesAVX2 for a run of packed A panels into C in mode 0, 1 or 2
// (no A in place, bias or bfloat16 out: the driver gives it none).
func sgemmAVX2Tiles(t tileRun[float32]) {
	if t.n < 1 || t.h != nil || t.bias != nil || t.out != nil || t.c == nil {
		panic(fmt.Sprintf("kernels: AVX2 tiles take n ≥ 1 tiles from packed A into C, got n=%d, A in place %v, bias %v, out %v, C %v",
			t.n, t.h != nil, t.bias != nil, t.out != nil, t.c != nil))
	}
	// Element steps from one tile to the next: down a column the next A
	// panel and six rows of C, across a row the next B panel and 16
	// columns.
	astep, bstep, cstep := 6*t.k, 0, 6*t.ldc
	if t.across {
		astep, bstep, cstep = 0, 16*t.k, 16
	}
	last := t.n - 1
	if t.k > 0 {
		_ = t.a[last*astep+6*t.k-1]
		_ = t.b[last*bstep+16*t.k-1]
	}
	_ = t.c[last*cstep+5*t.ldc+15]
	sgemmTilesAVX2(t.n, t.k, unsafeData(t.a), 4*astep, unsafeData(t.b), 4*bstep, &t.c[0], t.ldc, 4*cstep, t.beta, t.mode)
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

func unsafeData(s []float32) *float32 {
	if len(s) == 0 {
		return nil
	}
	return &s[0]
}

// sgemmAVX2Kernel is the AVX2+FMA kernel: 6×16 tiles in 12 YMM
// accumulators, assembly packers for whole panels, and runs of whole
// tiles down each column of a block in one call (tileCol).
var sgemmAVX2Kernel = gemmKernel[float32]{name: "avx2-6x16", mr: 6, nr: 16, mc: 144, kc: 256, nc: 2048,
	full: sgemmAVX2, tiles: sgemmAVX2Tiles, tilesDown: true,
	packA: sgemmPackA6, packAT: sgemmPackAT6, packB: sgemmCopyRows16, packBT: sgemmPackBT16}

// sgemmAVX512Kernel is the AVX-512 kernel: 12×32 tiles in 24 ZMM
// accumulators, assembly packers for whole panels. Block sizes: depth
// slices of up to 512 (kcFor makes them even), so that a 1024-deep
// product passes over C twice rather than six times; the kc×32 B
// micro-panel (64 KiB) then streams from L2 beside the mc×kc A block
// (480 KiB of a 1 MiB L2). Against kc 192 (B in L1), on one Zen 5 core
// (BenchmarkGEMMTune's processor time, medians, same run): 1024³ 1.03–1.05×,
// 2048³ 1.04–1.12× as fast, ResNet-18's forward conv GEMMs 1.00–1.03×.
var sgemmAVX512Kernel = gemmKernel[float32]{name: "avx512-12x32", mr: 12, nr: 32, mc: 240, kc: 512, nc: 2048,
	full: sgemmAVX512, half: sgemmAVX512Half,
	packA: sgemmPackA12, packAT: sgemmPackAT12, packB: sgemmCopyRows32, packBT: sgemmPackBT32}

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
