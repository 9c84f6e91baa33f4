//go:build !noasm && amd64

#include "textflag.h"
#include "gemm_avx512_amd64.h"
#include "gemm_bf16_amd64.h"

// The direct bfloat16 3×3 convolution's micro-kernel (conv_dx.go): a 12×32
// tile of C in Z0..Z23 from the filter pairs at AX (12 dwords per tap and
// pair, taps outer) and two vectors of 16 pixels of the interleaved copy,
// based at R8 and R9. Per tap row r the bases step by W words (R13 in
// bytes); per tap column s the loads start s−1 words away, zero-masked by
// K1..K3 (first vector) and K4..K6 (second); per pair the loads step by
// the plane stride (R12 in bytes) and A by 48 bytes.

// DXSTEP(klo, khi) does one pair step of one tap: a prefetch of A ahead,
// two masked loads at R10 and R11, the twelve rows' pairs, and the
// pointers' advance.
#define DXSTEP(klo, khi) \
	PREFETCHT0  384(AX); \
	VMOVDQU32.Z (R10), klo, Z24; \
	VMOVDQU32.Z (R11), khi, Z25; \
	PAIRROWS6(0); \
	PAIRROWS6HI(0); \
	ADDQ $48, AX; \
	ADDQ R12, R10; \
	ADDQ R12, R11

// DXSTORE(lo, hi) stores one row: lo at DI (the first vector's columns),
// hi at DX (the second's); both step by SI (ldc in bytes).
#define DXSTORE(lo, hi) \
	VMOVUPS lo, (DI); \
	VMOVUPS hi, (DX); \
	ADDQ    SI, DI;   \
	ADDQ    SI, DX

// DXADD(lo, hi) is DXSTORE adding to what is there.
#define DXADD(lo, hi) \
	VADDPS  (DI), lo, lo; \
	VADDPS  (DX), hi, hi; \
	VMOVUPS lo, (DI);     \
	VMOVUPS hi, (DX);     \
	ADDQ    SI, DI;       \
	ADDQ    SI, DX

// func convDXKernelAVX512BF16(np int, a, b0, b1 *uint32, c0, c1 *float32, ldc, mode, w, ps int, m *uint16)
//
// The caller guarantees np ≥ 1, 9·np groups of 12 dwords at a, the words
// each load reads (masked lanes included) and 12 rows of 16 columns at c0
// and at c1.
TEXT ·convDXKernelAVX512BF16(SB), NOSPLIT, $0-88
	MOVQ  np+0(FP), BX
	MOVQ  a+8(FP), AX
	MOVQ  b0+16(FP), R8
	MOVQ  b1+24(FP), R9
	MOVQ  w+64(FP), R13
	SHLQ  $2, R13
	MOVQ  ps+72(FP), R12
	SHLQ  $2, R12
	MOVQ  m+80(FP), DX
	KMOVW 0(DX), K1
	KMOVW 2(DX), K2
	KMOVW 4(DX), K3
	KMOVW 6(DX), K4
	KMOVW 8(DX), K5
	KMOVW 10(DX), K6
	ZERO24
	MOVQ  $3, R14

taprow:
	LEAQ -4(R8), R10
	LEAQ -4(R9), R11
	MOVQ BX, CX

tap0:
	DXSTEP(K1, K4)
	DECQ CX
	JNZ  tap0
	MOVQ R8, R10
	MOVQ R9, R11
	MOVQ BX, CX

tap1:
	DXSTEP(K2, K5)
	DECQ CX
	JNZ  tap1
	LEAQ 4(R8), R10
	LEAQ 4(R9), R11
	MOVQ BX, CX

tap2:
	DXSTEP(K3, K6)
	DECQ CX
	JNZ  tap2
	ADDQ R13, R8
	ADDQ R13, R9
	DECQ R14
	JNZ  taprow

	MOVQ c0+32(FP), DI
	MOVQ c1+40(FP), DX
	MOVQ ldc+48(FP), SI
	SHLQ $2, SI
	MOVQ mode+56(FP), CX
	CMPQ CX, $1
	JEQ  add
	DXSTORE(Z0, Z1)
	DXSTORE(Z2, Z3)
	DXSTORE(Z4, Z5)
	DXSTORE(Z6, Z7)
	DXSTORE(Z8, Z9)
	DXSTORE(Z10, Z11)
	DXSTORE(Z12, Z13)
	DXSTORE(Z14, Z15)
	DXSTORE(Z16, Z17)
	DXSTORE(Z18, Z19)
	DXSTORE(Z20, Z21)
	DXSTORE(Z22, Z23)
	VZEROUPPER
	RET

add:
	DXADD(Z0, Z1)
	DXADD(Z2, Z3)
	DXADD(Z4, Z5)
	DXADD(Z6, Z7)
	DXADD(Z8, Z9)
	DXADD(Z10, Z11)
	DXADD(Z12, Z13)
	DXADD(Z14, Z15)
	DXADD(Z16, Z17)
	DXADD(Z18, Z19)
	DXADD(Z20, Z21)
	DXADD(Z22, Z23)
	VZEROUPPER
	RET

// dxPairIdx are the word indices that turn a filter's two channels' nine
// taps (lo[0..8], hi[0..8]) into the nine pairs (lo[t], hi[t]).
DATA dxPairIdx<>+0(SB)/2, $0
DATA dxPairIdx<>+2(SB)/2, $9
DATA dxPairIdx<>+4(SB)/2, $1
DATA dxPairIdx<>+6(SB)/2, $10
DATA dxPairIdx<>+8(SB)/2, $2
DATA dxPairIdx<>+10(SB)/2, $11
DATA dxPairIdx<>+12(SB)/2, $3
DATA dxPairIdx<>+14(SB)/2, $12
DATA dxPairIdx<>+16(SB)/2, $4
DATA dxPairIdx<>+18(SB)/2, $13
DATA dxPairIdx<>+20(SB)/2, $5
DATA dxPairIdx<>+22(SB)/2, $14
DATA dxPairIdx<>+24(SB)/2, $6
DATA dxPairIdx<>+26(SB)/2, $15
DATA dxPairIdx<>+28(SB)/2, $7
DATA dxPairIdx<>+30(SB)/2, $16
DATA dxPairIdx<>+32(SB)/2, $8
DATA dxPairIdx<>+34(SB)/2, $17
DATA dxPairIdx<>+36(SB)/2, $0
DATA dxPairIdx<>+38(SB)/2, $0
DATA dxPairIdx<>+40(SB)/2, $0
DATA dxPairIdx<>+42(SB)/2, $0
DATA dxPairIdx<>+44(SB)/2, $0
DATA dxPairIdx<>+46(SB)/2, $0
DATA dxPairIdx<>+48(SB)/2, $0
DATA dxPairIdx<>+50(SB)/2, $0
DATA dxPairIdx<>+52(SB)/2, $0
DATA dxPairIdx<>+54(SB)/2, $0
DATA dxPairIdx<>+56(SB)/2, $0
DATA dxPairIdx<>+58(SB)/2, $0
DATA dxPairIdx<>+60(SB)/2, $0
DATA dxPairIdx<>+62(SB)/2, $0
GLOBL dxPairIdx<>(SB), RODATA|NOPTR, $64

// dxTaps are the taps 0..8, scaled by the tap step to scatter the pairs.
DATA dxTaps<>+0(SB)/4, $0
DATA dxTaps<>+4(SB)/4, $1
DATA dxTaps<>+8(SB)/4, $2
DATA dxTaps<>+12(SB)/4, $3
DATA dxTaps<>+16(SB)/4, $4
DATA dxTaps<>+20(SB)/4, $5
DATA dxTaps<>+24(SB)/4, $6
DATA dxTaps<>+28(SB)/4, $7
DATA dxTaps<>+32(SB)/4, $8
DATA dxTaps<>+36(SB)/4, $0
DATA dxTaps<>+40(SB)/4, $0
DATA dxTaps<>+44(SB)/4, $0
DATA dxTaps<>+48(SB)/4, $0
DATA dxTaps<>+52(SB)/4, $0
DATA dxTaps<>+56(SB)/4, $0
DATA dxTaps<>+60(SB)/4, $0
GLOBL dxTaps<>(SB), RODATA|NOPTR, $64

// func dxPackPairsAVX512(n int, w *uint16, blk *uint32, st int)
//
// The filter packer's inner loop for one filter: n channel pairs, each the
// 18 words of two channels' taps at w (stepping 36 bytes), into the nine
// dwords blk[t·st] (blk stepping 12 dwords per pair). The caller
// guarantees n ≥ 1 and that every word read and written is there.
TEXT ·dxPackPairsAVX512(SB), NOSPLIT, $0-32
	MOVQ         n+0(FP), CX
	MOVQ         w+8(FP), SI
	MOVQ         blk+16(FP), DI
	MOVQ         st+24(FP), AX
	VPBROADCASTD AX, Z3
	VPMULLD      dxTaps<>(SB), Z3, Z3
	VMOVDQU16    dxPairIdx<>(SB), Z4
	MOVL         $0x3FFFF, DX
	KMOVD        DX, K1
	MOVL         $0x1FF, DX

pack:
	VMOVDQU16.Z (SI), K1, Z1
	VPERMW      Z1, Z4, Z2
	KMOVW       DX, K2
	VPSCATTERDD Z2, K2, (DI)(Z3*4)
	ADDQ        $36, SI
	ADDQ        $48, DI
	DECQ        CX
	JNZ         pack
	VZEROUPPER
	RET
