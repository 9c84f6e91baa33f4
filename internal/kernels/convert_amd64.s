//go:build amd64 && !noasm

#include "textflag.h"
#include "convert_amd64.h"

// func f32ToF16Asm(dst *uint16, src *float32, n int)
// VCVTPS2PH with immediate 0: round to nearest even, MXCSR not consulted.
TEXT ·f32ToF16Asm(SB), NOSPLIT, $0-24
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ n+16(FP), CX
	CMPQ CX, $32
	JB   f2h_tail

f2h_loop32:
	VMOVUPS   (SI), Y0
	VMOVUPS   32(SI), Y1
	VMOVUPS   64(SI), Y2
	VMOVUPS   96(SI), Y3
	VCVTPS2PH $0, Y0, X0
	VCVTPS2PH $0, Y1, X1
	VCVTPS2PH $0, Y2, X2
	VCVTPS2PH $0, Y3, X3
	VMOVDQU   X0, (DI)
	VMOVDQU   X1, 16(DI)
	VMOVDQU   X2, 32(DI)
	VMOVDQU   X3, 48(DI)
	ADDQ      $128, SI
	ADDQ      $64, DI
	SUBQ      $32, CX
	CMPQ      CX, $32
	JAE       f2h_loop32

f2h_tail:
	TESTQ CX, CX
	JZ    f2h_done

f2h_loop8:
	VMOVUPS   (SI), Y0
	VCVTPS2PH $0, Y0, X0
	VMOVDQU   X0, (DI)
	ADDQ      $32, SI
	ADDQ      $16, DI
	SUBQ      $8, CX
	JNZ       f2h_loop8

f2h_done:
	VZEROUPPER
	RET

// func f16ToF32Asm(dst *float32, src *uint16, n int)
TEXT ·f16ToF32Asm(SB), NOSPLIT, $0-24
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ n+16(FP), CX

	MOVL         $0x00400000, AX
	VMOVQ        AX, X8
	VPBROADCASTD X8, Y8

	CMPQ CX, $32
	JB   h2f_tail

h2f_loop32:
	H2F((SI), Y0, Y4, Y5)
	H2F(16(SI), Y1, Y6, Y7)
	H2F(32(SI), Y2, Y4, Y5)
	H2F(48(SI), Y3, Y6, Y7)
	VMOVUPS Y0, (DI)
	VMOVUPS Y1, 32(DI)
	VMOVUPS Y2, 64(DI)
	VMOVUPS Y3, 96(DI)
	ADDQ    $64, SI
	ADDQ    $128, DI
	SUBQ    $32, CX
	CMPQ    CX, $32
	JAE     h2f_loop32

h2f_tail:
	TESTQ CX, CX
	JZ    h2f_done

h2f_loop8:
	H2F((SI), Y0, Y4, Y5)
	VMOVUPS Y0, (DI)
	ADDQ    $16, SI
	ADDQ    $32, DI
	SUBQ    $8, CX
	JNZ     h2f_loop8

h2f_done:
	VZEROUPPER
	RET

// func f32ToBF16Asm(dst *uint16, src *float32, n int)
TEXT ·f32ToBF16Asm(SB), NOSPLIT, $0-24
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ n+16(FP), CX

	BF16CONSTS

	CMPQ CX, $16
	JB   f2b_tail

f2b_loop16:
	VMOVDQU (SI), Y0
	VMOVDQU 32(SI), Y1
	BF16ROUND(Y0, Y2, Y3, Y4)
	BF16ROUND(Y1, Y5, Y6, Y7)
	VPACKUSDW Y5, Y2, Y2
	VPERMQ    $0xd8, Y2, Y2
	VMOVDQU   Y2, (DI)
	ADDQ      $64, SI
	ADDQ      $32, DI
	SUBQ      $16, CX
	CMPQ      CX, $16
	JAE       f2b_loop16

f2b_tail:
	TESTQ CX, CX
	JZ    f2b_done
	VMOVDQU (SI), Y0
	BF16ROUND(Y0, Y2, Y3, Y4)
	VPACKUSDW Y2, Y2, Y2
	VPERMQ    $0xd8, Y2, Y2
	VMOVDQU   X2, (DI)

f2b_done:
	VZEROUPPER
	RET

// func bf16ToF32Asm(dst *float32, src *uint16, n int)
TEXT ·bf16ToF32Asm(SB), NOSPLIT, $0-24
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ n+16(FP), CX
	CMPQ CX, $32
	JB   b2f_tail

b2f_loop32:
	VPMOVZXWD (SI), Y0
	VPMOVZXWD 16(SI), Y1
	VPMOVZXWD 32(SI), Y2
	VPMOVZXWD 48(SI), Y3
	VPSLLD    $16, Y0, Y0
	VPSLLD    $16, Y1, Y1
	VPSLLD    $16, Y2, Y2
	VPSLLD    $16, Y3, Y3
	VMOVDQU   Y0, (DI)
	VMOVDQU   Y1, 32(DI)
	VMOVDQU   Y2, 64(DI)
	VMOVDQU   Y3, 96(DI)
	ADDQ      $64, SI
	ADDQ      $128, DI
	SUBQ      $32, CX
	CMPQ      CX, $32
	JAE       b2f_loop32

b2f_tail:
	TESTQ CX, CX
	JZ    b2f_done

b2f_loop8:
	VPMOVZXWD (SI), Y0
	VPSLLD    $16, Y0, Y0
	VMOVDQU   Y0, (DI)
	ADDQ      $16, SI
	ADDQ      $32, DI
	SUBQ      $8, CX
	JNZ       b2f_loop8

b2f_done:
	VZEROUPPER
	RET
