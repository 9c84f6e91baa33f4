//go:build !noasm && amd64

#include "textflag.h"

// func narrowTile32AVX512(out *uint16, src *float32, ldo, lds, rows int)
//
// Narrows rows rows (≥ 1) of 32 float32 at src, lds elements apart, to
// bfloat16 rows at out, ldo elements apart: round to nearest even as
// (x + 0x7fff + ((x>>16)&1)) >> 16 on the bits, a NaN (|x| > Inf) as
// (x>>16) | 0x40 (dtype.BF16FromF32, and convert_amd64.h's BF16ROUND).
TEXT ·narrowTile32AVX512(SB), NOSPLIT, $0-40
	MOVQ out+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ ldo+16(FP), BX
	MOVQ lds+24(FP), DX
	MOVQ rows+32(FP), CX
	MOVL $0x7fff, AX
	VPBROADCASTD AX, Z8
	MOVL $1, AX
	VPBROADCASTD AX, Z9
	MOVL $0x40, AX
	VPBROADCASTD AX, Z10
	MOVL $0x7fffffff, AX
	VPBROADCASTD AX, Z11
	MOVL $0x7f800000, AX
	VPBROADCASTD AX, Z12
	SHLQ $1, BX               // bytes between rows of out
	SHLQ $2, DX               // bytes between rows of src

row:
	VMOVDQU32 (SI), Z0
	VMOVDQU32 64(SI), Z4
	VPSRLD    $16, Z0, Z1
	VPSRLD    $16, Z4, Z5
	VPANDD    Z9, Z1, Z2
	VPANDD    Z9, Z5, Z6
	VPADDD    Z8, Z2, Z2
	VPADDD    Z8, Z6, Z6
	VPADDD    Z0, Z2, Z2
	VPADDD    Z4, Z6, Z6
	VPSRLD    $16, Z2, Z2
	VPSRLD    $16, Z6, Z6
	VPANDD    Z11, Z0, Z3
	VPANDD    Z11, Z4, Z7
	VPCMPGTD  Z12, Z3, K1
	VPCMPGTD  Z12, Z7, K2
	VPORD     Z10, Z1, Z1
	VPORD     Z10, Z5, Z5
	VMOVDQU32 Z1, K1, Z2
	VMOVDQU32 Z5, K2, Z6
	VPMOVDW   Z2, (DI)
	VPMOVDW   Z6, 32(DI)
	ADDQ      DX, SI
	ADDQ      BX, DI
	DECQ      CX
	JNZ       row
	VZEROUPPER
	RET
