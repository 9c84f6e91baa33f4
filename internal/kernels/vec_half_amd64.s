//go:build amd64 && !noasm

#include "textflag.h"
#include "convert_amd64.h"

// AVX2 loops over 16-bit float operands (vec_half.go), converting in
// registers: no float32 copy of any operand goes through memory.

// BINBF16 defines func name(d, a, b *uint16, n int) for bfloat16 d, a, b:
// d = bf16(f32(a) OP f32(b)), n a positive multiple of 8; 16 elements per
// iteration while it can.
#define BINBF16(name, OP) \
TEXT name(SB), NOSPLIT, $0-32 \
	MOVQ d+0(FP), DI          \
	MOVQ a+8(FP), SI          \
	MOVQ b+16(FP), DX         \
	MOVQ n+24(FP), CX         \
	BF16CONSTS                \
	CMPQ CX, $16              \
	JB   tail                 \
loop16:                       \
	BF16LOAD8((SI), Y0)       \
	BF16LOAD8(16(SI), Y1)     \
	BF16LOAD8((DX), Y2)       \
	BF16LOAD8(16(DX), Y3)     \
	OP        Y2, Y0, Y0      \
	OP        Y3, Y1, Y1      \
	BF16ROUND(Y0, Y2, Y3, Y4) \
	BF16ROUND(Y1, Y5, Y6, Y7) \
	VPACKUSDW Y5, Y2, Y2      \
	VPERMQ    $0xd8, Y2, Y2   \
	VMOVDQU   Y2, (DI)        \
	ADDQ      $32, SI         \
	ADDQ      $32, DX         \
	ADDQ      $32, DI         \
	SUBQ      $16, CX         \
	CMPQ      CX, $16         \
	JAE       loop16          \
tail:                         \
	TESTQ CX, CX              \
	JZ    done                \
	BF16LOAD8((SI), Y0)       \
	BF16LOAD8((DX), Y2)       \
	OP    Y2, Y0, Y0          \
	BF16STORE8(Y0, (DI), Y2, X2, Y3, Y4) \
done:                         \
	VZEROUPPER                \
	RET

BINBF16(·vecAddBF16, VADDPS)
BINBF16(·vecSubBF16, VSUBPS)
BINBF16(·vecMulBF16, VMULPS)

// func vecRelu16(d, s *uint16, n int, lim int): d = s where 0 < s < lim
// as signed 16-bit integers (a positive, non-NaN float: lim is the
// format's first NaN pattern), else +0. n is a positive multiple of 16.
TEXT ·vecRelu16(SB), NOSPLIT, $0-32
	MOVQ         d+0(FP), DI
	MOVQ         s+8(FP), SI
	MOVQ         n+16(FP), CX
	MOVQ         lim+24(FP), AX
	VMOVQ        AX, X15
	VPBROADCASTW X15, Y15
	VPXOR        Y14, Y14, Y14

relu16_loop:
	VMOVDQU  (SI), Y0
	VPCMPGTW Y14, Y0, Y1
	VPCMPGTW Y0, Y15, Y2
	VPAND    Y1, Y0, Y0
	VPAND    Y2, Y0, Y0
	VMOVDQU  Y0, (DI)
	ADDQ     $32, SI
	ADDQ     $32, DI
	SUBQ     $16, CX
	JNZ      relu16_loop
	VZEROUPPER
	RET

// func vecReluGrad16(dx, dy, y *uint16, n int, lim, quiet int): dx = dy
// where 0 < y < lim (as vecRelu16), else +0, and a NaN dy (|dy| ≥ lim)
// gets its quiet bit, as narrowing its float32 widening would give it.
// n is a positive multiple of 16.
TEXT ·vecReluGrad16(SB), NOSPLIT, $0-48
	MOVQ         dx+0(FP), DI
	MOVQ         dy+8(FP), SI
	MOVQ         y+16(FP), DX
	MOVQ         n+24(FP), CX
	MOVQ         lim+32(FP), AX
	VMOVQ        AX, X15
	VPBROADCASTW X15, Y15
	MOVQ         quiet+40(FP), AX
	VMOVQ        AX, X13
	VPBROADCASTW X13, Y13
	MOVL         $0x7fff, AX
	VMOVQ        AX, X12
	VPBROADCASTW X12, Y12
	VPXOR        Y14, Y14, Y14

rgrad16_loop:
	VMOVDQU  (DX), Y0
	VPCMPGTW Y14, Y0, Y1
	VPCMPGTW Y0, Y15, Y2
	VPAND    Y2, Y1, Y1
	VMOVDQU  (SI), Y3
	VPAND    Y12, Y3, Y4
	VPCMPGTW Y4, Y15, Y5
	VPANDN   Y13, Y5, Y5
	VPOR     Y5, Y3, Y3
	VPAND    Y1, Y3, Y3
	VMOVDQU  Y3, (DI)
	ADDQ     $32, SI
	ADDQ     $32, DX
	ADDQ     $32, DI
	SUBQ     $16, CX
	JNZ      rgrad16_loop
	VZEROUPPER
	RET

// func vecAxpyBF16(y, x *uint16, alpha float32, n int): bfloat16 y =
// bf16(f32(y) + alpha·f32(x)), the product rounded before the sum; n a
// positive multiple of 8.
TEXT ·vecAxpyBF16(SB), NOSPLIT, $0-32
	MOVQ         y+0(FP), DI
	MOVQ         x+8(FP), SI
	VBROADCASTSS alpha+16(FP), Y15
	MOVQ         n+24(FP), CX
	BF16CONSTS

axpyb_loop:
	BF16LOAD8((SI), Y0)
	BF16LOAD8((DI), Y1)
	VMULPS Y15, Y0, Y0
	VADDPS Y0, Y1, Y1
	BF16STORE8(Y1, (DI), Y2, X2, Y3, Y4)
	ADDQ   $16, SI
	ADDQ   $16, DI
	SUBQ   $8, CX
	JNZ    axpyb_loop
	VZEROUPPER
	RET

// func accBF16F64(acc *float64, h *uint16, n int)
// acc[i] = float64(bf16 h[i]) + acc[i], the widening the first operand of
// each addition (the one whose NaN is kept when both are NaNs), as the Go
// compiler orders acc[j] += float64(v); n a positive multiple of 8.
TEXT ·accBF16F64(SB), NOSPLIT, $0-24
	MOVQ         acc+0(FP), DI
	MOVQ         h+8(FP), SI
	MOVQ         n+16(FP), CX

accloop:
	BF16LOAD8((SI), Y0)
	VCVTPS2PD    X0, Y1
	VEXTRACTF128 $1, Y0, X2
	VCVTPS2PD    X2, Y2
	VADDPD       (DI), Y1, Y1
	VADDPD       32(DI), Y2, Y2
	VMOVUPD      Y1, (DI)
	VMOVUPD      Y2, 32(DI)
	ADDQ         $16, SI
	ADDQ         $64, DI
	SUBQ         $8, CX
	JNZ          accloop
	VZEROUPPER
	RET
