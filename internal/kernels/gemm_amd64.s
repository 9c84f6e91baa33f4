//go:build !noasm && amd64

#include "textflag.h"

// The AVX2+FMA float32 GEMM micro-kernel: one 6×16 tile of C from a packed
// A micro-panel (k×6, k-major) and a packed B micro-panel (k×16, k-major).
//
// Registers: Y0..Y11 accumulate the tile, row r in Y(2r) (columns 0..7) and
// Y(2r+1) (columns 8..15); Y12, Y13 hold one row of B; Y14, Y15 take turns
// holding a broadcast element of A. Each k step is 2 loads of B, 6
// broadcasts of A and 12 independent FMAs, enough to cover the 4-cycle FMA
// latency on both FMA pipes.

// STEP(ao, bo) does one k step with A at ao(AX) and B at bo(BX).
#define STEP(ao, bo) \
	VMOVUPS      (bo)(BX), Y12;    \
	VMOVUPS      (bo+32)(BX), Y13; \
	VBROADCASTSS (ao)(AX), Y14;    \
	VFMADD231PS  Y12, Y14, Y0;     \
	VFMADD231PS  Y13, Y14, Y1;     \
	VBROADCASTSS (ao+4)(AX), Y15;  \
	VFMADD231PS  Y12, Y15, Y2;     \
	VFMADD231PS  Y13, Y15, Y3;     \
	VBROADCASTSS (ao+8)(AX), Y14;  \
	VFMADD231PS  Y12, Y14, Y4;     \
	VFMADD231PS  Y13, Y14, Y5;     \
	VBROADCASTSS (ao+12)(AX), Y15; \
	VFMADD231PS  Y12, Y15, Y6;     \
	VFMADD231PS  Y13, Y15, Y7;     \
	VBROADCASTSS (ao+16)(AX), Y14; \
	VFMADD231PS  Y12, Y14, Y8;     \
	VFMADD231PS  Y13, Y14, Y9;     \
	VBROADCASTSS (ao+20)(AX), Y15; \
	VFMADD231PS  Y12, Y15, Y10;    \
	VFMADD231PS  Y13, Y15, Y11

// STORE(lo, hi) writes one row: C[0:8] = lo, C[8:16] = hi.
#define STORE(lo, hi) \
	VMOVUPS lo, (DI);   \
	VMOVUPS hi, 32(DI); \
	ADDQ    SI, DI

// ADDROW(lo, hi) does one row of C += acc.
#define ADDROW(lo, hi) \
	VADDPS  (DI), lo, lo;     \
	VADDPS  32(DI), hi, hi;   \
	VMOVUPS lo, (DI);         \
	VMOVUPS hi, 32(DI);       \
	ADDQ    SI, DI

// BETAROW(lo, hi) does one row of C = acc + beta·C, beta in Y12.
#define BETAROW(lo, hi) \
	VFMADD231PS (DI), Y12, lo;   \
	VFMADD231PS 32(DI), Y12, hi; \
	VMOVUPS     lo, (DI);        \
	VMOVUPS     hi, 32(DI);      \
	ADDQ        SI, DI

// func sgemmKernelAVX2(k int, a, b, c *float32, ldc int, beta float32, mode int)
//
// mode 0: C = A·B; mode 1: C += A·B; mode 2: C = A·B + beta·C. ldc is in
// elements. The caller guarantees k ≥ 0, 6k floats at a, 16k at b and a
// full 6×16 tile at c.
TEXT ·sgemmKernelAVX2(SB), NOSPLIT, $0-56
	MOVQ k+0(FP), CX
	MOVQ a+8(FP), AX
	MOVQ b+16(FP), BX
	MOVQ c+24(FP), DI
	MOVQ ldc+32(FP), SI
	SHLQ $2, SI

	// Touch the C tile early so its lines arrive during the k loop.
	MOVQ      DI, R8
	PREFETCHT0 (R8)
	PREFETCHT0 60(R8)
	ADDQ      SI, R8
	PREFETCHT0 (R8)
	PREFETCHT0 60(R8)
	ADDQ      SI, R8
	PREFETCHT0 (R8)
	PREFETCHT0 60(R8)
	ADDQ      SI, R8
	PREFETCHT0 (R8)
	PREFETCHT0 60(R8)
	ADDQ      SI, R8
	PREFETCHT0 (R8)
	PREFETCHT0 60(R8)
	ADDQ      SI, R8
	PREFETCHT0 (R8)
	PREFETCHT0 60(R8)

	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
	VXORPS Y4, Y4, Y4
	VXORPS Y5, Y5, Y5
	VXORPS Y6, Y6, Y6
	VXORPS Y7, Y7, Y7
	VXORPS Y8, Y8, Y8
	VXORPS Y9, Y9, Y9
	VXORPS Y10, Y10, Y10
	VXORPS Y11, Y11, Y11

	MOVQ CX, DX
	SHRQ $2, DX
	JZ   tail

loop4:
	PREFETCHT0 384(AX)
	STEP(0, 0)
	STEP(24, 64)
	STEP(48, 128)
	STEP(72, 192)
	ADDQ $96, AX
	ADDQ $256, BX
	DECQ DX
	JNZ  loop4

tail:
	ANDQ $3, CX
	JZ   store

loop1:
	STEP(0, 0)
	ADDQ $24, AX
	ADDQ $64, BX
	DECQ CX
	JNZ  loop1

store:
	MOVQ mode+48(FP), DX
	CMPQ DX, $1
	JEQ  add
	CMPQ DX, $2
	JEQ  beta

	STORE(Y0, Y1)
	STORE(Y2, Y3)
	STORE(Y4, Y5)
	STORE(Y6, Y7)
	STORE(Y8, Y9)
	STORE(Y10, Y11)
	VZEROUPPER
	RET

add:
	ADDROW(Y0, Y1)
	ADDROW(Y2, Y3)
	ADDROW(Y4, Y5)
	ADDROW(Y6, Y7)
	ADDROW(Y8, Y9)
	ADDROW(Y10, Y11)
	VZEROUPPER
	RET

beta:
	VBROADCASTSS beta+40(FP), Y12
	BETAROW(Y0, Y1)
	BETAROW(Y2, Y3)
	BETAROW(Y4, Y5)
	BETAROW(Y6, Y7)
	BETAROW(Y8, Y9)
	BETAROW(Y10, Y11)
	VZEROUPPER
	RET

// Packing helpers for full panels (the Go packers handle edges, tails and
// 16-bit sources). Pointers and counts are checked by the Go wrappers.

// func sgemmCopyRows16AVX2(dst, src *float32, ld, k int)
//
// Copies k rows of 16 floats, ld floats apart at src, to dst as k·16
// contiguous floats: a full panel of op(B) = B.
TEXT ·sgemmCopyRows16AVX2(SB), NOSPLIT, $0-32
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ ld+16(FP), DX
	SHLQ $2, DX
	MOVQ k+24(FP), CX
	TESTQ CX, CX
	JZ   copydone

copyloop:
	VMOVUPS (SI), Y0
	VMOVUPS 32(SI), Y1
	VMOVUPS Y0, (DI)
	VMOVUPS Y1, 32(DI)
	ADDQ    DX, SI
	ADDQ    $64, DI
	DECQ    CX
	JNZ     copyloop

copydone:
	VZEROUPPER
	RET

// TRANSPOSE8 transposes the 8×8 floats in Y0..Y7 (row i in Yi) into
// Y8..Y15 (column j in Y(8+j)), using Y0..Y7 as scratch.
#define TRANSPOSE8 \
	VUNPCKLPS  Y1, Y0, Y8;         \
	VUNPCKHPS  Y1, Y0, Y9;         \
	VUNPCKLPS  Y3, Y2, Y10;        \
	VUNPCKHPS  Y3, Y2, Y11;        \
	VUNPCKLPS  Y5, Y4, Y12;        \
	VUNPCKHPS  Y5, Y4, Y13;        \
	VUNPCKLPS  Y7, Y6, Y14;        \
	VUNPCKHPS  Y7, Y6, Y15;        \
	VSHUFPS    $0x44, Y10, Y8, Y0; \
	VSHUFPS    $0xEE, Y10, Y8, Y1; \
	VSHUFPS    $0x44, Y11, Y9, Y2; \
	VSHUFPS    $0xEE, Y11, Y9, Y3; \
	VSHUFPS    $0x44, Y14, Y12, Y4; \
	VSHUFPS    $0xEE, Y14, Y12, Y5; \
	VSHUFPS    $0x44, Y15, Y13, Y6; \
	VSHUFPS    $0xEE, Y15, Y13, Y7; \
	VPERM2F128 $0x20, Y4, Y0, Y8;  \
	VPERM2F128 $0x20, Y5, Y1, Y9;  \
	VPERM2F128 $0x20, Y6, Y2, Y10; \
	VPERM2F128 $0x20, Y7, Y3, Y11; \
	VPERM2F128 $0x31, Y4, Y0, Y12; \
	VPERM2F128 $0x31, Y5, Y1, Y13; \
	VPERM2F128 $0x31, Y6, Y2, Y14; \
	VPERM2F128 $0x31, Y7, Y3, Y15

// func sgemmPackA6AVX2(dst, src *float32, ld, k int, alpha float32)
//
// Interleaves 6 rows of k floats (k a multiple of 8), ld floats apart at
// src, into dst as k groups of 6, times alpha: a full panel of op(A) = A.
TEXT ·sgemmPackA6AVX2(SB), NOSPLIT, $0-36
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ ld+16(FP), DX
	SHLQ $2, DX
	MOVQ k+24(FP), CX
	SHRQ $3, CX
	JZ   a6done
	LEAQ (DX)(DX*2), R8 // 3·ld bytes

a6loop:
	VBROADCASTSS alpha+32(FP), Y15
	MOVQ    SI, R9
	VMULPS  (R9), Y15, Y0
	VMULPS  (R9)(DX*1), Y15, Y1
	VMULPS  (R9)(DX*2), Y15, Y2
	VMULPS  (R9)(R8*1), Y15, Y3
	LEAQ    (R9)(DX*4), R9
	VMULPS  (R9), Y15, Y4
	VMULPS  (R9)(DX*1), Y15, Y5
	VXORPS  Y6, Y6, Y6
	VXORPS  Y7, Y7, Y7
	TRANSPOSE8
	// Column j of the block is group j: its first 6 floats go to dst.
	VMOVUPS      X8, (DI)
	VEXTRACTF128 $1, Y8, X0
	VMOVSD       X0, 16(DI)
	VMOVUPS      X9, 24(DI)
	VEXTRACTF128 $1, Y9, X0
	VMOVSD       X0, 40(DI)
	VMOVUPS      X10, 48(DI)
	VEXTRACTF128 $1, Y10, X0
	VMOVSD       X0, 64(DI)
	VMOVUPS      X11, 72(DI)
	VEXTRACTF128 $1, Y11, X0
	VMOVSD       X0, 88(DI)
	VMOVUPS      X12, 96(DI)
	VEXTRACTF128 $1, Y12, X0
	VMOVSD       X0, 112(DI)
	VMOVUPS      X13, 120(DI)
	VEXTRACTF128 $1, Y13, X0
	VMOVSD       X0, 136(DI)
	VMOVUPS      X14, 144(DI)
	VEXTRACTF128 $1, Y14, X0
	VMOVSD       X0, 160(DI)
	VMOVUPS      X15, 168(DI)
	VEXTRACTF128 $1, Y15, X0
	VMOVSD       X0, 184(DI)
	ADDQ    $32, SI
	ADDQ    $192, DI
	DECQ    CX
	JNZ     a6loop

a6done:
	VZEROUPPER
	RET

// func sgemmPackBT16AVX2(dst, src *float32, ld, k int)
//
// Gathers 16 runs of k floats (k a multiple of 8), ld floats apart at src,
// into dst as k groups of 16: a full panel of op(B) = Bᵀ.
TEXT ·sgemmPackBT16AVX2(SB), NOSPLIT, $0-32
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ ld+16(FP), DX
	SHLQ $2, DX
	MOVQ k+24(FP), CX
	SHRQ $3, CX
	JZ   btdone
	LEAQ (DX)(DX*2), R8 // 3·ld bytes

btloop:
	// Columns 0..7 of the panel, then 8..15.
	MOVQ    SI, R9
	MOVQ    DI, R10
	MOVQ    $2, R11

bthalf:
	VMOVUPS (R9), Y0
	VMOVUPS (R9)(DX*1), Y1
	VMOVUPS (R9)(DX*2), Y2
	VMOVUPS (R9)(R8*1), Y3
	LEAQ    (R9)(DX*4), R9
	VMOVUPS (R9), Y4
	VMOVUPS (R9)(DX*1), Y5
	VMOVUPS (R9)(DX*2), Y6
	VMOVUPS (R9)(R8*1), Y7
	LEAQ    (R9)(DX*4), R9
	TRANSPOSE8
	VMOVUPS Y8, (R10)
	VMOVUPS Y9, 64(R10)
	VMOVUPS Y10, 128(R10)
	VMOVUPS Y11, 192(R10)
	VMOVUPS Y12, 256(R10)
	VMOVUPS Y13, 320(R10)
	VMOVUPS Y14, 384(R10)
	VMOVUPS Y15, 448(R10)
	ADDQ    $32, R10
	DECQ    R11
	JNZ     bthalf

	ADDQ $32, SI
	ADDQ $512, DI
	DECQ CX
	JNZ  btloop

btdone:
	VZEROUPPER
	RET

// func sgemmPackAT6AVX2(dst, src *float32, ld, k int, alpha float32)
//
// Copies k rows of 6 floats, ld floats apart at src, to dst as k groups of
// 6, times alpha: a full panel of op(A) = Aᵀ.
TEXT ·sgemmPackAT6AVX2(SB), NOSPLIT, $0-36
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ ld+16(FP), DX
	SHLQ $2, DX
	MOVQ k+24(FP), CX
	VBROADCASTSS alpha+32(FP), X15
	TESTQ CX, CX
	JZ   atdone

atloop:
	VMULPS  (SI), X15, X0
	VMOVSD  16(SI), X1
	VMULPS  X1, X15, X1
	VMOVUPS X0, (DI)
	VMOVSD  X1, 16(DI)
	ADDQ    DX, SI
	ADDQ    $24, DI
	DECQ    CX
	JNZ     atloop

atdone:
	VZEROUPPER
	RET
