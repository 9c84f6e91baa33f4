//go:build !noasm && amd64

#include "textflag.h"
#include "convert_amd64.h"

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
	MOVQ         AX, X8
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
