//go:build !noasm && amd64

package kernels

import "unsafe"

// amxTilesBF16 computes n 32×32 float32 tiles of C, down a column or
// across a row, from AMX panels with TDPBF16PS (see gemm_amx_amd64.s):
// kb 16-pair steps, modes as amxGo and 3 (the sums start from the bias
// row), tmp a 32×32 scratch for mode 2 and for tiles narrowed to out
// without C (c nil); tile i's A row r of step s is the 64 bytes at a +
// i·atile + s·astep + r·astride, its B panel at b + i·btile, its C at c
// + i·ctile, its bias at bias + i·biastile and its out at out + i·otile
// (all in bytes).
//
//go:noescape
func amxTilesBF16(n, kb int, a unsafe.Pointer, astride, astep, atile int, b unsafe.Pointer, btile int, c unsafe.Pointer, ldc, ctile int, bias *float32, biastile int, tmp *float32, beta float32, mode int, out *uint16, ldo, otile int)

// The A strides of a packed AMX panel: 64 bytes between rows, 2048
// between steps.
const amxRowBytes, amxStepBytes = 64, 2048

// amxBF16 is the checked Go entry to the AMX micro-kernel (full).
func amxBF16(k int, a, b, c []float32, ldc int, beta float32, mode int) {
	amxTiles(tileRun[float32]{n: 1, k: k, a: a, b: b, c: c, ldc: ldc, beta: beta, mode: mode})
}

// amxBF16At is amxBF16 with the 32 rows of A read in place from bfloat16
// bits (the kernel's fullAt): row r's depth p at h[at + r·ld + p], k a
// multiple of 32.
func amxBF16At(k int, h []uint16, at, ld int, b, c []float32, ldc int, beta float32, mode int) {
	amxTiles(tileRun[float32]{n: 1, k: k, h: h, at: at, ld: ld, b: b, c: c, ldc: ldc, beta: beta, mode: mode})
}

// amxBF16Bias is the kernel's fullBias: the tile's sums start from the
// 32 values of bias in every row (as mode 1 from C holding bias in each
// row), C = that sum; A read in place from h at at (row distance ld) when
// h is not nil, else from the packed panel a.
func amxBF16Bias(k int, h []uint16, at, ld int, a, b, bias, c []float32, ldc int) {
	amxTiles(tileRun[float32]{n: 1, k: k, h: h, at: at, ld: ld, a: a, b: b, bias: bias, c: c, ldc: ldc})
}

// amxTiles is the kernel's tiles: the checked entry to amxTilesBF16.
// Mode 2 without a scratch tile takes one on the stack (4 KiB).
func amxTiles(t tileRun[float32]) {
	if t.mode == 2 && t.bias == nil && len(t.tmp) < 32*32 {
		var tmp [32 * 32]float32
		t.tmp = tmp[:]
		amxTilesRun(&t)
		return
	}
	amxTilesRun(&t)
}

// amxTilesRun checks t's bounds and runs it.
func amxTilesRun(t *tileRun[float32]) {
	kb := amxSteps(t.k)
	// The last tile's row and column of tiles, and the byte steps from one
	// tile to the next of A, B and bias (B and bias 0 down a column, A 0
	// across a row), C and out.
	down, across := t.n-1, 0
	atile, btile, biastile, ctile, otile := 0, 0, 0, 4*32*t.ldc, 2*32*t.ldo
	if t.across {
		down, across = 0, t.n-1
		btile, biastile, ctile, otile = 4*32*t.k, 4*32, 4*32, 2*32
	}
	a, astride, astep, apanel := amxA(t, kb, down)
	if !t.across {
		atile = apanel
	}
	_ = t.b[32*t.k*across+512*kb-1]
	mode, bias, tmp := t.mode, (*float32)(nil), (*float32)(nil)
	if t.bias != nil {
		_ = t.bias[32*across+31]
		mode, bias = 3, &t.bias[0]
	}
	if mode == 2 || t.c == nil {
		_ = t.tmp[32*32-1]
		tmp = &t.tmp[0]
	}
	var c unsafe.Pointer
	if t.c != nil {
		_ = t.c[(32*down+31)*t.ldc+32*across+31]
		c = unsafe.Pointer(&t.c[0])
	} else if t.out == nil || mode == 1 || mode == 2 {
		panic("kernels: AMX kernel without C in mode 1 or 2, or without out")
	}
	var out *uint16
	if t.out != nil {
		_ = t.out[t.oat+(32*down+31)*t.ldo+32*across+31]
		out = &t.out[t.oat]
	}
	amxTilesBF16(t.n, kb, a, astride, astep, atile, unsafe.Pointer(&t.b[0]), btile, c, t.ldc, ctile,
		bias, biastile, tmp, t.beta, mode, out, t.ldo, otile)
}

// amxA checks the A panels of t's tiles (down rows of tiles below the
// first) and returns amxTilesBF16's A arguments, with the bytes from one
// row of tiles' panel to the next.
func amxA(t *tileRun[float32], kb, down int) (a unsafe.Pointer, astride, astep, apanel int) {
	if t.h == nil {
		_ = t.a[32*t.k*down+512*kb-1]
		return unsafe.Pointer(&t.a[0]), amxRowBytes, amxStepBytes, 4 * 32 * t.k
	}
	if t.k%32 != 0 {
		panic("kernels: AMX kernel with A in place, depth not a multiple of 32")
	}
	_ = t.h[t.at+(32*down+31)*t.ld+t.k-1]
	return unsafe.Pointer(&t.h[t.at]), 2 * t.ld, 64, 2 * 32 * t.ld
}

// amxBF16Kernel is the AMX kernel and its blocking: a 32×32 tile, an A
// panel of 32·kc bfloat16 values (32 KiB at kc 512) kept in L1 while the
// B panels of a row of tiles stream from L2 (tileRows). kc 512 against
// 384 took 11–14% more GFLOP per CPU second on the GPT step's K = 1024
// products (two slices, not three: one pass over C less) and left the
// others and ResNet-18's conv products within noise (one core, load 3–4).
var amxBF16Kernel = gemmKernel[float32]{name: "amx-bf16-32x32", mr: 32, nr: 32, mc: 256, kc: 512, nc: 2048,
	full: amxBF16, fullAt: amxBF16At, fullBias: amxBF16Bias, tiles: amxTiles, pairs: true, amx: true}

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
