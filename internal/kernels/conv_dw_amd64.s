//go:build !noasm && amd64

#include "textflag.h"
#include "gemm_avx512_amd64.h"
#include "transpose_amd64.h"

// The direct weight gradient's packer (conv_dw.go): up to 16 channel rows
// of n pixels of two samples (lo, hi; plane elements between channels)
// into pair words (lo | hi<<16), pixel-major: pixel j's width words at
// dst + j·step, zero for the channels from rows on. Per chunk of 16
// pixels the 16 rows are widened into Z0–Z15 (a row a channel, masked
// past n), transposed as 16×16 dwords (dword, quadword, then two 128-bit
// lane shuffles: Z16–Z31 hold the stages between) so that Zj is pixel j's
// 16 channels, and stored under the width mask.

// func dwPackAVX512(dst *uint32, step, width int, lo, hi *uint16, plane, rows, n int)
TEXT ·dwPackAVX512(SB), NOSPLIT, $0-64
	MOVQ dst+0(FP), R8
	MOVQ step+8(FP), R9
	SHLQ $2, R9
	MOVQ width+16(FP), CX
	MOVQ $1, DX
	SHLQ CX, DX
	DECQ DX
	KMOVW DX, K2
	MOVQ lo+24(FP), R10
	MOVQ hi+32(FP), R11
	MOVQ $0xFFFF, DX
	TESTQ R11, R11
	JNZ  hiset
	MOVQ R10, R11
	XORQ DX, DX
hiset:
	KMOVW DX, K4
	MOVQ plane+40(FP), R12
	SHLQ $1, R12
	MOVQ rows+48(FP), R13
	MOVQ n+56(FP), R14

chunk:
	MOVQ $16, CX
	CMPQ R14, CX
	CMOVQLT R14, CX
	MOVQ $1, DX
	SHLQ CX, DX
	DECQ DX
	KMOVW DX, K1
	KANDW K1, K4, K3
	ZERO12
	VPXORD Z12, Z12, Z12
	VPXORD Z13, Z13, Z13
	VPXORD Z14, Z14, Z14
	VPXORD Z15, Z15, Z15
	MOVQ R10, SI
	MOVQ R11, DI
	CMPQ R13, $0
	JLE  loaded
	VPMOVZXWD.Z (SI), K1, Z0
	VPMOVZXWD.Z (DI), K3, Z16
	VPSLLD $16, Z16, Z16
	VPORD Z16, Z0, Z0
	ADDQ R12, SI
	ADDQ R12, DI
	CMPQ R13, $1
	JLE  loaded
	VPMOVZXWD.Z (SI), K1, Z1
	VPMOVZXWD.Z (DI), K3, Z16
	VPSLLD $16, Z16, Z16
	VPORD Z16, Z1, Z1
	ADDQ R12, SI
	ADDQ R12, DI
	CMPQ R13, $2
	JLE  loaded
	VPMOVZXWD.Z (SI), K1, Z2
	VPMOVZXWD.Z (DI), K3, Z16
	VPSLLD $16, Z16, Z16
	VPORD Z16, Z2, Z2
	ADDQ R12, SI
	ADDQ R12, DI
	CMPQ R13, $3
	JLE  loaded
	VPMOVZXWD.Z (SI), K1, Z3
	VPMOVZXWD.Z (DI), K3, Z16
	VPSLLD $16, Z16, Z16
	VPORD Z16, Z3, Z3
	ADDQ R12, SI
	ADDQ R12, DI
	CMPQ R13, $4
	JLE  loaded
	VPMOVZXWD.Z (SI), K1, Z4
	VPMOVZXWD.Z (DI), K3, Z16
	VPSLLD $16, Z16, Z16
	VPORD Z16, Z4, Z4
	ADDQ R12, SI
	ADDQ R12, DI
	CMPQ R13, $5
	JLE  loaded
	VPMOVZXWD.Z (SI), K1, Z5
	VPMOVZXWD.Z (DI), K3, Z16
	VPSLLD $16, Z16, Z16
	VPORD Z16, Z5, Z5
	ADDQ R12, SI
	ADDQ R12, DI
	CMPQ R13, $6
	JLE  loaded
	VPMOVZXWD.Z (SI), K1, Z6
	VPMOVZXWD.Z (DI), K3, Z16
	VPSLLD $16, Z16, Z16
	VPORD Z16, Z6, Z6
	ADDQ R12, SI
	ADDQ R12, DI
	CMPQ R13, $7
	JLE  loaded
	VPMOVZXWD.Z (SI), K1, Z7
	VPMOVZXWD.Z (DI), K3, Z16
	VPSLLD $16, Z16, Z16
	VPORD Z16, Z7, Z7
	ADDQ R12, SI
	ADDQ R12, DI
	CMPQ R13, $8
	JLE  loaded
	VPMOVZXWD.Z (SI), K1, Z8
	VPMOVZXWD.Z (DI), K3, Z16
	VPSLLD $16, Z16, Z16
	VPORD Z16, Z8, Z8
	ADDQ R12, SI
	ADDQ R12, DI
	CMPQ R13, $9
	JLE  loaded
	VPMOVZXWD.Z (SI), K1, Z9
	VPMOVZXWD.Z (DI), K3, Z16
	VPSLLD $16, Z16, Z16
	VPORD Z16, Z9, Z9
	ADDQ R12, SI
	ADDQ R12, DI
	CMPQ R13, $10
	JLE  loaded
	VPMOVZXWD.Z (SI), K1, Z10
	VPMOVZXWD.Z (DI), K3, Z16
	VPSLLD $16, Z16, Z16
	VPORD Z16, Z10, Z10
	ADDQ R12, SI
	ADDQ R12, DI
	CMPQ R13, $11
	JLE  loaded
	VPMOVZXWD.Z (SI), K1, Z11
	VPMOVZXWD.Z (DI), K3, Z16
	VPSLLD $16, Z16, Z16
	VPORD Z16, Z11, Z11
	ADDQ R12, SI
	ADDQ R12, DI
	CMPQ R13, $12
	JLE  loaded
	VPMOVZXWD.Z (SI), K1, Z12
	VPMOVZXWD.Z (DI), K3, Z16
	VPSLLD $16, Z16, Z16
	VPORD Z16, Z12, Z12
	ADDQ R12, SI
	ADDQ R12, DI
	CMPQ R13, $13
	JLE  loaded
	VPMOVZXWD.Z (SI), K1, Z13
	VPMOVZXWD.Z (DI), K3, Z16
	VPSLLD $16, Z16, Z16
	VPORD Z16, Z13, Z13
	ADDQ R12, SI
	ADDQ R12, DI
	CMPQ R13, $14
	JLE  loaded
	VPMOVZXWD.Z (SI), K1, Z14
	VPMOVZXWD.Z (DI), K3, Z16
	VPSLLD $16, Z16, Z16
	VPORD Z16, Z14, Z14
	ADDQ R12, SI
	ADDQ R12, DI
	CMPQ R13, $15
	JLE  loaded
	VPMOVZXWD.Z (SI), K1, Z15
	VPMOVZXWD.Z (DI), K3, Z16
	VPSLLD $16, Z16, Z16
	VPORD Z16, Z15, Z15
	ADDQ R12, SI
	ADDQ R12, DI

loaded:
	TRANSPOSE16X16D
	MOVQ R8, BX
	CMPQ CX, $0
	JLE  stored
	VMOVDQU32 Z0, K2, (BX)
	ADDQ R9, BX
	CMPQ CX, $1
	JLE  stored
	VMOVDQU32 Z1, K2, (BX)
	ADDQ R9, BX
	CMPQ CX, $2
	JLE  stored
	VMOVDQU32 Z2, K2, (BX)
	ADDQ R9, BX
	CMPQ CX, $3
	JLE  stored
	VMOVDQU32 Z3, K2, (BX)
	ADDQ R9, BX
	CMPQ CX, $4
	JLE  stored
	VMOVDQU32 Z4, K2, (BX)
	ADDQ R9, BX
	CMPQ CX, $5
	JLE  stored
	VMOVDQU32 Z5, K2, (BX)
	ADDQ R9, BX
	CMPQ CX, $6
	JLE  stored
	VMOVDQU32 Z6, K2, (BX)
	ADDQ R9, BX
	CMPQ CX, $7
	JLE  stored
	VMOVDQU32 Z7, K2, (BX)
	ADDQ R9, BX
	CMPQ CX, $8
	JLE  stored
	VMOVDQU32 Z8, K2, (BX)
	ADDQ R9, BX
	CMPQ CX, $9
	JLE  stored
	VMOVDQU32 Z9, K2, (BX)
	ADDQ R9, BX
	CMPQ CX, $10
	JLE  stored
	VMOVDQU32 Z10, K2, (BX)
	ADDQ R9, BX
	CMPQ CX, $11
	JLE  stored
	VMOVDQU32 Z11, K2, (BX)
	ADDQ R9, BX
	CMPQ CX, $12
	JLE  stored
	VMOVDQU32 Z12, K2, (BX)
	ADDQ R9, BX
	CMPQ CX, $13
	JLE  stored
	VMOVDQU32 Z13, K2, (BX)
	ADDQ R9, BX
	CMPQ CX, $14
	JLE  stored
	VMOVDQU32 Z14, K2, (BX)
	ADDQ R9, BX
	CMPQ CX, $15
	JLE  stored
	VMOVDQU32 Z15, K2, (BX)
	ADDQ R9, BX

stored:
	MOVQ R9, DX
	SHLQ $4, DX
	ADDQ DX, R8
	ADDQ $32, R10
	ADDQ $32, R11
	SUBQ $16, R14
	JG   chunk
	VZEROUPPER
	RET
