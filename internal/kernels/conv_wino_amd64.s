//go:build amd64 && !noasm

#include "textflag.h"

// The Winograd F(2×2, 3×3) transforms of conv_wino_xform.go for eight
// tiles side by side in one tile row, on AVX2: one Y register holds one
// position of the eight tiles. They do the Go loops' additions in the
// same order, so the results are theirs bit for bit.

// WROW loads row R's four window columns of the eight tiles (tile t's
// column c is R[2t+c]) into c0 … c3, using Y12 and Y13.
#define WROW(R, c0, c1, c2, c3) \
	VMOVUPS (R), Y12 \
	VMOVUPS 32(R), Y13 \
	VSHUFPS $0x88, Y13, Y12, c0 \
	VSHUFPS $0xdd, Y13, Y12, c1 \
	VPERMPD $0xd8, c0, c0 \
	VPERMPD $0xd8, c1, c1 \
	VMOVUPS 8(R), Y12 \
	VMOVUPS 40(R), Y13 \
	VSHUFPS $0x88, Y13, Y12, c2 \
	VSHUFPS $0xdd, Y13, Y12, c3 \
	VPERMPD $0xd8, c2, c2 \
	VPERMPD $0xd8, c3, c3

// UROW stores row r of U = (Bᵀ·d)·B from row r of Bᵀ·d in e0 … e3:
// e0−e2, e1+e2, e2−e1, e1−e3 at blk rows 4r … 4r+3 (off the first's byte
// offset), using Y12.
#define UROW(e0, e1, e2, e3, off) \
	VSUBPS e2, e0, Y12 \
	VMOVUPS Y12, off(DI) \
	VADDPS e2, e1, Y12 \
	VMOVUPS Y12, off+128(DI) \
	VSUBPS e1, e2, Y12 \
	VMOVUPS Y12, off+256(DI) \
	VSUBPS e3, e1, Y12 \
	VMOVUPS Y12, off+384(DI)

// func winoInput8AVX2(blk *winoPanel, i int, src *float32, ld int)
// transforms the eight 4×4 windows src[r·ld + 2t + c] (t < 8, reading
// src[r·ld : r·ld+18] of rows r < 4) into columns i … i+7 of blk.
TEXT ·winoInput8AVX2(SB), NOSPLIT, $0-32
	MOVQ blk+0(FP), DI
	MOVQ i+8(FP), AX
	LEAQ (DI)(AX*4), DI
	MOVQ src+16(FP), SI
	MOVQ ld+24(FP), DX
	SHLQ $2, DX
	LEAQ (SI)(DX*1), R8
	LEAQ (R8)(DX*1), R9
	LEAQ (R9)(DX*1), R10
	WROW(R8, Y0, Y1, Y2, Y3)   // d1
	WROW(R9, Y4, Y5, Y6, Y7)   // d2
	VADDPS Y4, Y0, Y8          // e1 = d1 + d2
	VADDPS Y5, Y1, Y9
	VADDPS Y6, Y2, Y10
	VADDPS Y7, Y3, Y11
	UROW(Y8, Y9, Y10, Y11, 512)
	VSUBPS Y0, Y4, Y8          // e2 = d2 − d1
	VSUBPS Y1, Y5, Y9
	VSUBPS Y2, Y6, Y10
	VSUBPS Y3, Y7, Y11
	UROW(Y8, Y9, Y10, Y11, 1024)
	WROW(SI, Y8, Y9, Y10, Y11) // d0
	VSUBPS Y4, Y8, Y8          // e0 = d0 − d2
	VSUBPS Y5, Y9, Y9
	VSUBPS Y6, Y10, Y10
	VSUBPS Y7, Y11, Y11
	UROW(Y8, Y9, Y10, Y11, 0)
	WROW(R10, Y8, Y9, Y10, Y11) // d3
	VSUBPS Y8, Y0, Y8          // e3 = d1 − d3
	VSUBPS Y9, Y1, Y9
	VSUBPS Y10, Y2, Y10
	VSUBPS Y11, Y3, Y11
	UROW(Y8, Y9, Y10, Y11, 1536)
	VZEROUPPER
	RET

// SCOL loads column c of m (blk rows c, 4+c, 8+c, 12+c at byte offset
// off = 128·c) and sets s0 = m0+m1+m2 and s1 = m1−m2−m3, using Y8 … Y11.
#define SCOL(off, s0, s1) \
	VMOVUPS off(DI), Y8 \
	VMOVUPS off+512(DI), Y9 \
	VMOVUPS off+1024(DI), Y10 \
	VMOVUPS off+1536(DI), Y11 \
	VADDPS Y9, Y8, s0 \
	VADDPS Y10, s0, s0 \
	VSUBPS Y10, Y9, s1 \
	VSUBPS Y11, s1, s1

// YROW stores output row (a0 … a3 a row of Aᵀ·m) of the eight tiles,
// y0 = a0+a1+a2 and y1 = a1−a2−a3 interleaved, 16 values at R.
#define YROW(a0, a1, a2, a3, R) \
	VADDPS a1, a0, Y8 \
	VADDPS a2, Y8, Y8 \
	VSUBPS a2, a1, Y9 \
	VSUBPS a3, Y9, Y9 \
	VUNPCKLPS Y9, Y8, Y10 \
	VUNPCKHPS Y9, Y8, Y11 \
	VPERM2F128 $0x20, Y11, Y10, Y12 \
	VPERM2F128 $0x31, Y11, Y10, Y13 \
	VMOVUPS Y12, (R) \
	VMOVUPS Y13, 32(R)

// func winoOutput8AVX2(blk *winoPanel, i int, dst *float32, ld int)
// transforms the products in columns i … i+7 of blk into the eight 2×2
// outputs dst[r·ld + 2t + c] (rows r < 2, 16 values each).
TEXT ·winoOutput8AVX2(SB), NOSPLIT, $0-32
	MOVQ blk+0(FP), DI
	MOVQ i+8(FP), AX
	LEAQ (DI)(AX*4), DI
	MOVQ dst+16(FP), SI
	MOVQ ld+24(FP), DX
	SHLQ $2, DX
	SCOL(0, Y0, Y4)
	SCOL(128, Y1, Y5)
	SCOL(256, Y2, Y6)
	SCOL(384, Y3, Y7)
	YROW(Y0, Y1, Y2, Y3, SI)
	ADDQ DX, SI
	YROW(Y4, Y5, Y6, Y7, SI)
	VZEROUPPER
	RET
