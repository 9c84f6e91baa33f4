//go:build amd64 && !noasm

#include "textflag.h"

// The AVX2 loops of quant.go and quantconv.go; see quant_amd64.go.

// Dword order that undoes the lane interleaving of VPACKSSDW + VPACKSSWB.
DATA qperm<>+0(SB)/4, $0
DATA qperm<>+4(SB)/4, $4
DATA qperm<>+8(SB)/4, $1
DATA qperm<>+12(SB)/4, $5
DATA qperm<>+16(SB)/4, $2
DATA qperm<>+20(SB)/4, $6
DATA qperm<>+24(SB)/4, $3
DATA qperm<>+28(SB)/4, $7
GLOBL qperm<>(SB), RODATA|NOPTR, $32

// func qAbsMaxAVX2(src *float32, n int) uint32
TEXT ·qAbsMaxAVX2(SB), NOSPLIT, $0-20
	MOVQ         src+0(FP), SI
	MOVQ         n+8(FP), CX
	MOVL         $0x7fffffff, AX
	VMOVQ        AX, X15
	VPBROADCASTD X15, Y15
	VPXOR        Y4, Y4, Y4
	VPXOR        Y5, Y5, Y5
	VPXOR        Y6, Y6, Y6
	VPXOR        Y7, Y7, Y7

am_loop:
	VPAND   (SI), Y15, Y0
	VPAND   32(SI), Y15, Y1
	VPAND   64(SI), Y15, Y2
	VPAND   96(SI), Y15, Y3
	VPMAXUD Y0, Y4, Y4
	VPMAXUD Y1, Y5, Y5
	VPMAXUD Y2, Y6, Y6
	VPMAXUD Y3, Y7, Y7
	ADDQ    $128, SI
	SUBQ    $32, CX
	JNZ     am_loop

	VPMAXUD      Y5, Y4, Y4
	VPMAXUD      Y7, Y6, Y6
	VPMAXUD      Y6, Y4, Y4
	VEXTRACTI128 $1, Y4, X5
	VPMAXUD      X5, X4, X4
	VPSHUFD      $0x4e, X4, X5
	VPMAXUD      X5, X4, X4
	VPSHUFD      $0xb1, X4, X5
	VPMAXUD      X5, X4, X4
	VMOVQ        X4, AX
	MOVL         AX, ret+16(FP)
	VZEROUPPER
	RET

// func qQuantizeAVX2(dst *int8, src *float32, n int, inv float32)
TEXT ·qQuantizeAVX2(SB), NOSPLIT, $0-28
	MOVQ         dst+0(FP), DI
	MOVQ         src+8(FP), SI
	MOVQ         n+16(FP), CX
	VBROADCASTSS inv+24(FP), Y15
	MOVL         $0xc2fe0000, AX // −127.0
	VMOVQ        AX, X14
	VPBROADCASTD X14, Y14
	MOVL         $0x42fe0000, AX // 127.0
	VMOVQ        AX, X13
	VPBROADCASTD X13, Y13
	VMOVDQU      qperm<>(SB), Y12

q_loop:
	VMULPS     (SI), Y15, Y0
	VMULPS     32(SI), Y15, Y1
	VMULPS     64(SI), Y15, Y2
	VMULPS     96(SI), Y15, Y3
	// max(v, −127) returns −127 for a NaN v (the second source).
	VMAXPS     Y14, Y0, Y0
	VMAXPS     Y14, Y1, Y1
	VMAXPS     Y14, Y2, Y2
	VMAXPS     Y14, Y3, Y3
	VMINPS     Y13, Y0, Y0
	VMINPS     Y13, Y1, Y1
	VMINPS     Y13, Y2, Y2
	VMINPS     Y13, Y3, Y3
	// Round half to even whatever MXCSR says, then convert exactly.
	VROUNDPS   $8, Y0, Y0
	VROUNDPS   $8, Y1, Y1
	VROUNDPS   $8, Y2, Y2
	VROUNDPS   $8, Y3, Y3
	VCVTTPS2DQ Y0, Y0
	VCVTTPS2DQ Y1, Y1
	VCVTTPS2DQ Y2, Y2
	VCVTTPS2DQ Y3, Y3
	VPACKSSDW  Y1, Y0, Y0
	VPACKSSDW  Y3, Y2, Y2
	VPACKSSWB  Y2, Y0, Y0
	VPERMD     Y0, Y12, Y0
	VMOVDQU    Y0, (DI)
	ADDQ       $128, SI
	ADDQ       $32, DI
	SUBQ       $32, CX
	JNZ        q_loop
	VZEROUPPER
	RET

// func qDequantBiasAVX2(out *float32, in *int32, n int, s, b float32, relu bool)
TEXT ·qDequantBiasAVX2(SB), NOSPLIT, $0-33
	MOVQ         out+0(FP), DI
	MOVQ         in+8(FP), SI
	MOVQ         n+16(FP), CX
	VBROADCASTSS s+24(FP), Y15
	VBROADCASTSS b+28(FP), Y14
	MOVBLZX      relu+32(FP), R9
	VXORPS       Y13, Y13, Y13
	TESTQ        R9, R9
	JNZ          dq_relu

dq_plain:
	VCVTDQ2PS (SI), Y0
	VMULPS    Y15, Y0, Y0
	VADDPS    Y14, Y0, Y0
	VMOVUPS   Y0, (DI)
	ADDQ      $32, SI
	ADDQ      $32, DI
	SUBQ      $8, CX
	JNZ       dq_plain
	VZEROUPPER
	RET

dq_relu:
	VCVTDQ2PS (SI), Y0
	VMULPS    Y15, Y0, Y0
	VADDPS    Y14, Y0, Y0
	// max(v, +0): a NaN or a −0 gives +0 (the second source).
	VMAXPS    Y13, Y0, Y0
	VMOVUPS   Y0, (DI)
	ADDQ      $32, SI
	ADDQ      $32, DI
	SUBQ      $8, CX
	JNZ       dq_relu
	VZEROUPPER
	RET
