//go:build !noasm && amd64

#include "textflag.h"
#include "convert_amd64.h"
#include "pack_f32_amd64.h"

// The widening packers of pack_half.go: k rows of 16·n16 16-bit floats,
// ldb bytes apart at src, to k·16·n16 contiguous floats at dst. Each inner
// step widens 16 values (32 bytes in, 64 out).

// WIDENARGS loads the arguments: dst in DI, src in SI, ldb in DX, k in CX,
// the bytes of one source row (32·n16) in R8.
#define WIDENARGS \
	MOVQ dst+0(FP), DI \
	MOVQ src+8(FP), SI \
	MOVQ ldb+16(FP), DX \
	MOVQ k+24(FP), CX \
	MOVQ n16+32(FP), R8 \
	SHLQ $5, R8

// func widenRowsBF16AVX2(dst *float32, src *uint16, ldb, k, n16 int)
TEXT ·widenRowsBF16AVX2(SB), NOSPLIT, $0-40
	WIDENARGS

b16row:
	XORQ R9, R9

b16step:
	BF16LOAD8((SI)(R9*1), Y0)
	BF16LOAD8(16(SI)(R9*1), Y1)
	VMOVUPS Y0, (DI)
	VMOVUPS Y1, 32(DI)
	ADDQ    $64, DI
	ADDQ    $32, R9
	CMPQ    R9, R8
	JB      b16step
	ADDQ    DX, SI
	DECQ    CX
	JNZ     b16row
	VZEROUPPER
	RET

// func widenRowsF16AVX2(dst *float32, src *uint16, ldb, k, n16 int)
TEXT ·widenRowsF16AVX2(SB), NOSPLIT, $0-40
	WIDENARGS
	MOVL         $0x00400000, AX
	VMOVQ        AX, X8
	VPBROADCASTD X8, Y8

h16row:
	XORQ R9, R9

h16step:
	H2F((SI)(R9*1), Y0, Y4, Y5)
	H2F(16(SI)(R9*1), Y1, Y6, Y7)
	VMOVUPS Y0, (DI)
	VMOVUPS Y1, 32(DI)
	ADDQ    $64, DI
	ADDQ    $32, R9
	CMPQ    R9, R8
	JB      h16step
	ADDQ    DX, SI
	DECQ    CX
	JNZ     h16row
	VZEROUPPER
	RET

// func widenColsBF16AVX2(dst *float32, src *uint16, ldb, k, nr int)
//
// Widens nr runs of k bfloat16 (nr and k multiples of 8), ldb bytes apart
// at src, into dst as k groups of nr floats: a full panel of op(B) = Bᵀ.
// Each 8 depths × 8 runs are widened as they load and are one 8×8
// transpose (shuffles only, so every bit is kept).
TEXT ·widenColsBF16AVX2(SB), NOSPLIT, $0-40
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ ldb+16(FP), DX
	MOVQ k+24(FP), CX
	SHRQ $3, CX
	JZ   wcdone
	MOVQ nr+32(FP), AX
	LEAQ (AX*4), BX      // group stride in bytes
	SHRQ $3, AX          // blocks of 8 runs
	LEAQ (DX)(DX*2), R8  // 3·ldb
	LEAQ (BX)(BX*2), R12 // 3 groups

wcloop:
	MOVQ SI, R9
	MOVQ DI, R10
	MOVQ AX, R11

wcblock:
	BF16LOAD8((R9), Y0)
	BF16LOAD8((R9)(DX*1), Y1)
	BF16LOAD8((R9)(DX*2), Y2)
	BF16LOAD8((R9)(R8*1), Y3)
	LEAQ      (R9)(DX*4), R9
	BF16LOAD8((R9), Y4)
	BF16LOAD8((R9)(DX*1), Y5)
	BF16LOAD8((R9)(DX*2), Y6)
	BF16LOAD8((R9)(R8*1), Y7)
	LEAQ      (R9)(DX*4), R9
	TRANSPOSE8
	VMOVUPS   Y8, (R10)
	VMOVUPS   Y9, (R10)(BX*1)
	VMOVUPS   Y10, (R10)(BX*2)
	VMOVUPS   Y11, (R10)(R12*1)
	LEAQ      (R10)(BX*4), R13
	VMOVUPS   Y12, (R13)
	VMOVUPS   Y13, (R13)(BX*1)
	VMOVUPS   Y14, (R13)(BX*2)
	VMOVUPS   Y15, (R13)(R12*1)
	ADDQ      $32, R10
	DECQ      R11
	JNZ       wcblock

	ADDQ $16, SI
	LEAQ (DI)(BX*8), DI
	DECQ CX
	JNZ  wcloop

wcdone:
	VZEROUPPER
	RET
