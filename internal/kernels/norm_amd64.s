//go:build amd64 && !noasm

#include "textflag.h"

// AVX2 loops of norm.go for float32 data, computing in float64 with no
// fused multiply-add, so that the Go loops there give the same bits. n is
// a positive multiple of 16 (normSqDevF32) or 8 (the others).

// func normSqDevF32(x *float32, n int, mu float64, acc *[16]float64):
// acc[j] += (x[16q+j] − mu)², in order of q.
TEXT ·normSqDevF32(SB), NOSPLIT, $0-32
	MOVQ         x+0(FP), SI
	MOVQ         n+8(FP), CX
	VBROADCASTSD mu+16(FP), Y15
	MOVQ         acc+24(FP), DI
	VMOVUPD      (DI), Y0
	VMOVUPD      32(DI), Y1
	VMOVUPD      64(DI), Y2
	VMOVUPD      96(DI), Y3

sq_loop:
	VCVTPS2PD (SI), Y4
	VCVTPS2PD 16(SI), Y5
	VCVTPS2PD 32(SI), Y6
	VCVTPS2PD 48(SI), Y7
	VSUBPD    Y15, Y4, Y4
	VSUBPD    Y15, Y5, Y5
	VSUBPD    Y15, Y6, Y6
	VSUBPD    Y15, Y7, Y7
	VMULPD    Y4, Y4, Y4
	VMULPD    Y5, Y5, Y5
	VMULPD    Y6, Y6, Y6
	VMULPD    Y7, Y7, Y7
	VADDPD    Y4, Y0, Y0
	VADDPD    Y5, Y1, Y1
	VADDPD    Y6, Y2, Y2
	VADDPD    Y7, Y3, Y3
	ADDQ      $64, SI
	SUBQ      $16, CX
	JNZ       sq_loop

	VMOVUPD Y0, (DI)
	VMOVUPD Y1, 32(DI)
	VMOVUPD Y2, 64(DI)
	VMOVUPD Y3, 96(DI)
	VZEROUPPER
	RET

// func normDotDevF32(dy, x *float32, n int, mu float64, a, ax *[8]float64):
// a[j] += dy[8q+j] and ax[j] += dy[8q+j]·(x[8q+j] − mu), in order of q.
TEXT ·normDotDevF32(SB), NOSPLIT, $0-48
	MOVQ         dy+0(FP), SI
	MOVQ         x+8(FP), DX
	MOVQ         n+16(FP), CX
	VBROADCASTSD mu+24(FP), Y15
	MOVQ         a+32(FP), DI
	MOVQ         ax+40(FP), R8
	VMOVUPD      (DI), Y0
	VMOVUPD      32(DI), Y1
	VMOVUPD      (R8), Y2
	VMOVUPD      32(R8), Y3

dot_loop:
	VCVTPS2PD (SI), Y4
	VCVTPS2PD 16(SI), Y5
	VCVTPS2PD (DX), Y6
	VCVTPS2PD 16(DX), Y7
	VADDPD    Y4, Y0, Y0
	VADDPD    Y5, Y1, Y1
	VSUBPD    Y15, Y6, Y6
	VSUBPD    Y15, Y7, Y7
	VMULPD    Y4, Y6, Y6
	VMULPD    Y5, Y7, Y7
	VADDPD    Y6, Y2, Y2
	VADDPD    Y7, Y3, Y3
	ADDQ      $32, SI
	ADDQ      $32, DX
	SUBQ      $8, CX
	JNZ       dot_loop

	VMOVUPD Y0, (DI)
	VMOVUPD Y1, 32(DI)
	VMOVUPD Y2, (R8)
	VMOVUPD Y3, 32(R8)
	VZEROUPPER
	RET

// func normAffineF32(y, x *float32, n int, scale, shift float64):
// y = float32(float64(x)·scale + shift), the product rounded first.
TEXT ·normAffineF32(SB), NOSPLIT, $0-40
	MOVQ         y+0(FP), DI
	MOVQ         x+8(FP), SI
	MOVQ         n+16(FP), CX
	VBROADCASTSD scale+24(FP), Y14
	VBROADCASTSD shift+32(FP), Y15

aff_loop:
	VCVTPS2PD  (SI), Y0
	VCVTPS2PD  16(SI), Y1
	VMULPD     Y14, Y0, Y0
	VMULPD     Y14, Y1, Y1
	VADDPD     Y15, Y0, Y0
	VADDPD     Y15, Y1, Y1
	VCVTPD2PSY Y0, X0
	VCVTPD2PSY Y1, X1
	VMOVUPS    X0, (DI)
	VMOVUPS    X1, 16(DI)
	ADDQ       $32, SI
	ADDQ       $32, DI
	SUBQ       $8, CX
	JNZ        aff_loop
	VZEROUPPER
	RET

// func normGradF32(dx, dy, x *float32, n int, mu, a, b, c float64):
// dx = float32(a·dy + (b·(x − mu) + c)), every operation rounded.
TEXT ·normGradF32(SB), NOSPLIT, $0-64
	MOVQ         dx+0(FP), DI
	MOVQ         dy+8(FP), SI
	MOVQ         x+16(FP), DX
	MOVQ         n+24(FP), CX
	VBROADCASTSD mu+32(FP), Y12
	VBROADCASTSD a+40(FP), Y13
	VBROADCASTSD b+48(FP), Y14
	VBROADCASTSD c+56(FP), Y15

grad_loop:
	VCVTPS2PD  (SI), Y0
	VCVTPS2PD  16(SI), Y1
	VCVTPS2PD  (DX), Y2
	VCVTPS2PD  16(DX), Y3
	VSUBPD     Y12, Y2, Y2
	VSUBPD     Y12, Y3, Y3
	VMULPD     Y14, Y2, Y2
	VMULPD     Y14, Y3, Y3
	VADDPD     Y15, Y2, Y2
	VADDPD     Y15, Y3, Y3
	VMULPD     Y13, Y0, Y0
	VMULPD     Y13, Y1, Y1
	VADDPD     Y2, Y0, Y0
	VADDPD     Y3, Y1, Y1
	VCVTPD2PSY Y0, X0
	VCVTPD2PSY Y1, X1
	VMOVUPS    X0, (DI)
	VMOVUPS    X1, 16(DI)
	ADDQ       $32, SI
	ADDQ       $32, DX
	ADDQ       $32, DI
	SUBQ       $8, CX
	JNZ        grad_loop
	VZEROUPPER
	RET
