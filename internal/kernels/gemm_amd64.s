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

// func sgemmTilesAVX2(n, k int, a *float32, astep int, b *float32, bstep int, c *float32, ldc, cstep int, beta float32, mode int)
//
// A run of n whole 6×16 tiles: tile i from the A panel at a + i·astep and
// the B panel at b + i·bstep into the C tile at c + i·cstep (steps in
// bytes), each computed as a lone call would: mode 0: C = A·B; mode 1:
// C += A·B; mode 2: C = A·B + beta·C. ldc is in elements. The caller
// guarantees n ≥ 1, k ≥ 0, 6k floats in each A panel, 16k in each B panel
// and a full 6×16 tile at each C.
//
// Registers across the run: R9 tiles left, R10, R11, R12 the current
// tile's A, B and C; within a tile AX, BX walk the panels and DI the rows
// of C.
TEXT ·sgemmTilesAVX2(SB), NOSPLIT, $0-88
	MOVQ n+0(FP), R9
	MOVQ a+16(FP), R10
	MOVQ b+32(FP), R11
	MOVQ c+48(FP), R12
	MOVQ ldc+56(FP), SI
	SHLQ $2, SI

tile:
	MOVQ k+8(FP), CX
	MOVQ R10, AX
	MOVQ R11, BX
	MOVQ R12, DI

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
	MOVQ mode+80(FP), DX
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
	JMP next

add:
	ADDROW(Y0, Y1)
	ADDROW(Y2, Y3)
	ADDROW(Y4, Y5)
	ADDROW(Y6, Y7)
	ADDROW(Y8, Y9)
	ADDROW(Y10, Y11)
	JMP next

beta:
	VBROADCASTSS beta+72(FP), Y12
	BETAROW(Y0, Y1)
	BETAROW(Y2, Y3)
	BETAROW(Y4, Y5)
	BETAROW(Y6, Y7)
	BETAROW(Y8, Y9)
	BETAROW(Y10, Y11)

next:
	ADDQ astep+24(FP), R10
	ADDQ bstep+40(FP), R11
	ADDQ cstep+64(FP), R12
	DECQ R9
	JNZ  tile
	VZEROUPPER
	RET
