//go:build amd64 && !noasm

#include "textflag.h"

// ROW multiplies the broadcast pair of one A row (at m) with the two
// 8-column halves of B's pair (Y12, Y13) and adds into accumulators lo, hi.
// VPMADDWD forms a0·b0 + a1·b1 exactly in each 32-bit lane.
#define ROW(m, lo, hi) \
	VPBROADCASTD m, Y14        \
	VPMADDWD     Y12, Y14, Y15 \
	VPADDD       Y15, lo, lo   \
	VPMADDWD     Y13, Y14, Y15 \
	VPADDD       Y15, hi, hi

// PAIR does one k-pair: B's 16 column pairs at boff(DX), the six A rows'
// pairs at aoff from SI (rows 0-2) and R11 (rows 3-5), rows R10 bytes
// apart.
#define PAIR(boff, aoff) \
	VMOVDQU boff(DX), Y12             \
	VMOVDQU boff+32(DX), Y13          \
	ROW(aoff(SI), Y0, Y1)             \
	ROW(aoff(SI)(R10*1), Y2, Y3)      \
	ROW(aoff(SI)(R10*2), Y4, Y5)      \
	ROW(aoff(R11), Y6, Y7)            \
	ROW(aoff(R11)(R10*1), Y8, Y9)     \
	ROW(aoff(R11)(R10*2), Y10, Y11)

// STORE writes one tile row; ADDSTORE adds it to what is there.
#define STORE(lo, hi) \
	VMOVDQU lo, (DI)   \
	VMOVDQU hi, 32(DI) \
	ADDQ    R8, DI

#define ADDSTORE(lo, hi) \
	VPADDD  (DI), lo, lo   \
	VPADDD  32(DI), hi, hi \
	VMOVDQU lo, (DI)       \
	VMOVDQU hi, 32(DI)     \
	ADDQ    R8, DI

// func i8Kernel6x16AVX2(kp int, a *int16, lda int, b *int16, c *int32, ldc int, accumulate bool)
TEXT ·i8Kernel6x16AVX2(SB), NOSPLIT, $0-49
	MOVQ    kp+0(FP), CX
	MOVQ    a+8(FP), SI
	MOVQ    lda+16(FP), R10
	SHLQ    $1, R10
	MOVQ    b+24(FP), DX
	MOVQ    c+32(FP), DI
	MOVQ    ldc+40(FP), R8
	SHLQ    $2, R8
	MOVBLZX accumulate+48(FP), R9
	LEAQ    (SI)(R10*2), R11
	ADDQ    R10, R11

	VPXOR Y0, Y0, Y0
	VPXOR Y1, Y1, Y1
	VPXOR Y2, Y2, Y2
	VPXOR Y3, Y3, Y3
	VPXOR Y4, Y4, Y4
	VPXOR Y5, Y5, Y5
	VPXOR Y6, Y6, Y6
	VPXOR Y7, Y7, Y7
	VPXOR Y8, Y8, Y8
	VPXOR Y9, Y9, Y9
	VPXOR Y10, Y10, Y10
	VPXOR Y11, Y11, Y11

	MOVQ CX, BX
	SHRQ $1, BX
	JZ   odd

loop2:
	PAIR(0, 0)
	PAIR(64, 4)
	ADDQ $8, SI
	ADDQ $8, R11
	ADDQ $128, DX
	DECQ BX
	JNZ  loop2

odd:
	TESTQ $1, CX
	JZ    store
	PAIR(0, 0)

store:
	TESTQ R9, R9
	JNZ   add
	STORE(Y0, Y1)
	STORE(Y2, Y3)
	STORE(Y4, Y5)
	STORE(Y6, Y7)
	STORE(Y8, Y9)
	STORE(Y10, Y11)
	VZEROUPPER
	RET

add:
	ADDSTORE(Y0, Y1)
	ADDSTORE(Y2, Y3)
	ADDSTORE(Y4, Y5)
	ADDSTORE(Y6, Y7)
	ADDSTORE(Y8, Y9)
	ADDSTORE(Y10, Y11)
	VZEROUPPER
	RET

// func i8PackBPairs(dst *int16, r0, r1 *int8, groups, stride int)
TEXT ·i8PackBPairs(SB), NOSPLIT, $0-40
	MOVQ dst+0(FP), DI
	MOVQ r0+8(FP), SI
	MOVQ r1+16(FP), DX
	MOVQ groups+24(FP), CX
	MOVQ stride+32(FP), R8

packb_loop:
	VMOVDQU    (SI), X0
	VMOVDQU    (DX), X1
	VPUNPCKLBW X1, X0, X2
	VPUNPCKHBW X1, X0, X3
	VPMOVSXBW  X2, Y2
	VPMOVSXBW  X3, Y3
	VMOVDQU    Y2, (DI)
	VMOVDQU    Y3, 32(DI)
	ADDQ       $16, SI
	ADDQ       $16, DX
	ADDQ       R8, DI
	DECQ       CX
	JNZ        packb_loop
	VZEROUPPER
	RET

// func i8Widen(dst *int16, src *int8, n int)
TEXT ·i8Widen(SB), NOSPLIT, $0-24
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ n+16(FP), CX

widen_loop:
	VPMOVSXBW (SI), Y0
	VMOVDQU   Y0, (DI)
	ADDQ      $16, SI
	ADDQ      $32, DI
	SUBQ      $16, CX
	JNZ       widen_loop
	VZEROUPPER
	RET

// func i8DequantRow(out *float32, in *int32, sb, bias *float32, sa float32, n, flags int)
TEXT ·i8DequantRow(SB), NOSPLIT, $0-56
	MOVQ         out+0(FP), DI
	MOVQ         in+8(FP), SI
	MOVQ         sb+16(FP), DX
	MOVQ         bias+24(FP), R8
	VBROADCASTSS sa+32(FP), Y15
	MOVQ         n+40(FP), CX
	MOVQ         flags+48(FP), R9
	TESTQ        $1, R9
	JNZ          dq_percol
	VBROADCASTSS (DX), Y14
	VMULPS       Y14, Y15, Y14
	TESTQ        $2, R9
	JNZ          dq_scalar_bias

dq_scalar:
	VCVTDQ2PS (SI), Y0
	VMULPS    Y14, Y0, Y0
	VMOVUPS   Y0, (DI)
	ADDQ      $32, SI
	ADDQ      $32, DI
	SUBQ      $8, CX
	JNZ       dq_scalar
	VZEROUPPER
	RET

dq_scalar_bias:
	VCVTDQ2PS (SI), Y0
	VMULPS    Y14, Y0, Y0
	VADDPS    (R8), Y0, Y0
	VMOVUPS   Y0, (DI)
	ADDQ      $32, SI
	ADDQ      $32, DI
	ADDQ      $32, R8
	SUBQ      $8, CX
	JNZ       dq_scalar_bias
	VZEROUPPER
	RET

dq_percol:
	TESTQ $2, R9
	JNZ   dq_percol_bias

dq_percol_loop:
	VMULPS    (DX), Y15, Y1
	VCVTDQ2PS (SI), Y0
	VMULPS    Y1, Y0, Y0
	VMOVUPS   Y0, (DI)
	ADDQ      $32, SI
	ADDQ      $32, DI
	ADDQ      $32, DX
	SUBQ      $8, CX
	JNZ       dq_percol_loop
	VZEROUPPER
	RET

dq_percol_bias:
	VMULPS    (DX), Y15, Y1
	VCVTDQ2PS (SI), Y0
	VMULPS    Y1, Y0, Y0
	VADDPS    (R8), Y0, Y0
	VMOVUPS   Y0, (DI)
	ADDQ      $32, SI
	ADDQ      $32, DI
	ADDQ      $32, DX
	ADDQ      $32, R8
	SUBQ      $8, CX
	JNZ       dq_percol_bias
	VZEROUPPER
	RET
