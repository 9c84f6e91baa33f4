//go:build !noasm && amd64

#include "textflag.h"
#include "gemm_half_out_amd64.h"

// func narrowTile32AVX512(out *uint16, src *float32, ldo, lds, rows int)
//
// Narrows rows rows (≥ 1) of 32 float32 at src, lds elements apart, to
// bfloat16 rows at out, ldo elements apart (NARROWROW32).
TEXT ·narrowTile32AVX512(SB), NOSPLIT, $0-40
	MOVQ out+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ ldo+16(FP), BX
	MOVQ lds+24(FP), DX
	MOVQ rows+32(FP), CX
	NARROWCONSTS
	SHLQ $1, BX               // bytes between rows of out
	SHLQ $2, DX               // bytes between rows of src

row:
	NARROWROW32(SI, DI)
	ADDQ      DX, SI
	ADDQ      BX, DI
	DECQ      CX
	JNZ       row
	VZEROUPPER
	RET
