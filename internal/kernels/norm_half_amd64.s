//go:build amd64 && !noasm

#include "textflag.h"
#include "convert_amd64.h"

// The loops of norm_amd64.s for bfloat16 x, dy, y and dx: each element is
// widened in registers (exactly, as float32 then float64), and outputs
// are rounded to float32 and then to bfloat16, as the float32 loops
// followed by a conversion would round them; no float32 copy goes through
// memory. n is a positive multiple of 16 (the sums of 16 lanes) or 8.

// BF2PD widens the 4 bfloat16 at m to the float64 in y (x its low half).
#define BF2PD(m, x, y) VPMOVZXWD m, x; VPSLLD $16, x, x; VCVTPS2PD x, y

// PD2BF rounds the float64 in Y0 and Y1 to float32, then the 8 floats to
// bfloat16, stored at m (BF16CONSTS loaded; Y2..Y4 scratch).
#define PD2BF(m) \
	VCVTPD2PSY  Y0, X0           \
	VCVTPD2PSY  Y1, X1           \
	VINSERTF128 $1, X1, Y0, Y0   \
	BF16STORE8(Y0, m, Y2, X2, Y3, Y4)

// func vecSumBF16(s *uint16, n int, acc *[16]float64): acc[j] +=
// s[16q+j], as vecSumF32.
TEXT ·vecSumBF16(SB), NOSPLIT, $0-24
	MOVQ    s+0(FP), SI
	MOVQ    n+8(FP), CX
	MOVQ    acc+16(FP), DI
	VMOVUPD (DI), Y0
	VMOVUPD 32(DI), Y1
	VMOVUPD 64(DI), Y2
	VMOVUPD 96(DI), Y3

sumb_loop:
	BF2PD((SI), X4, Y4)
	BF2PD(8(SI), X5, Y5)
	BF2PD(16(SI), X6, Y6)
	BF2PD(24(SI), X7, Y7)
	VADDPD Y4, Y0, Y0
	VADDPD Y5, Y1, Y1
	VADDPD Y6, Y2, Y2
	VADDPD Y7, Y3, Y3
	ADDQ   $32, SI
	SUBQ   $16, CX
	JNZ    sumb_loop

	VMOVUPD Y0, (DI)
	VMOVUPD Y1, 32(DI)
	VMOVUPD Y2, 64(DI)
	VMOVUPD Y3, 96(DI)
	VZEROUPPER
	RET

// func normSqDevBF16(x *uint16, n int, mu float64, acc *[16]float64): as
// normSqDevF32.
TEXT ·normSqDevBF16(SB), NOSPLIT, $0-32
	MOVQ         x+0(FP), SI
	MOVQ         n+8(FP), CX
	VBROADCASTSD mu+16(FP), Y15
	MOVQ         acc+24(FP), DI
	VMOVUPD      (DI), Y0
	VMOVUPD      32(DI), Y1
	VMOVUPD      64(DI), Y2
	VMOVUPD      96(DI), Y3

sqb_loop:
	BF2PD((SI), X4, Y4)
	BF2PD(8(SI), X5, Y5)
	BF2PD(16(SI), X6, Y6)
	BF2PD(24(SI), X7, Y7)
	VSUBPD Y15, Y4, Y4
	VSUBPD Y15, Y5, Y5
	VSUBPD Y15, Y6, Y6
	VSUBPD Y15, Y7, Y7
	VMULPD Y4, Y4, Y4
	VMULPD Y5, Y5, Y5
	VMULPD Y6, Y6, Y6
	VMULPD Y7, Y7, Y7
	VADDPD Y4, Y0, Y0
	VADDPD Y5, Y1, Y1
	VADDPD Y6, Y2, Y2
	VADDPD Y7, Y3, Y3
	ADDQ   $32, SI
	SUBQ   $16, CX
	JNZ    sqb_loop

	VMOVUPD Y0, (DI)
	VMOVUPD Y1, 32(DI)
	VMOVUPD Y2, 64(DI)
	VMOVUPD Y3, 96(DI)
	VZEROUPPER
	RET

// func normDotDevBF16(dy, x *uint16, n int, mu float64, a, ax *[8]float64):
// as normDotDevF32.
TEXT ·normDotDevBF16(SB), NOSPLIT, $0-48
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

dotb_loop:
	BF2PD((SI), X4, Y4)
	BF2PD(8(SI), X5, Y5)
	BF2PD((DX), X6, Y6)
	BF2PD(8(DX), X7, Y7)
	VADDPD Y4, Y0, Y0
	VADDPD Y5, Y1, Y1
	VSUBPD Y15, Y6, Y6
	VSUBPD Y15, Y7, Y7
	VMULPD Y4, Y6, Y6
	VMULPD Y5, Y7, Y7
	VADDPD Y6, Y2, Y2
	VADDPD Y7, Y3, Y3
	ADDQ   $16, SI
	ADDQ   $16, DX
	SUBQ   $8, CX
	JNZ    dotb_loop

	VMOVUPD Y0, (DI)
	VMOVUPD Y1, 32(DI)
	VMOVUPD Y2, (R8)
	VMOVUPD Y3, 32(R8)
	VZEROUPPER
	RET

// AFFINEBF16 defines func name(y, x *uint16, n int, scale, shift float64):
// y = bf16(float32(float64(x)·scale + shift)) as normAffineF32, with POST
// applied to the float32 result in Y0 before it is rounded (nothing, or a
// ReLU against the zeros in Y13).
#define AFFINEBF16(name, POST) \
TEXT name(SB), NOSPLIT, $0-40   \
	MOVQ         y+0(FP), DI        \
	MOVQ         x+8(FP), SI        \
	MOVQ         n+16(FP), CX       \
	VBROADCASTSD scale+24(FP), Y14  \
	VBROADCASTSD shift+32(FP), Y15  \
	VXORPS       Y13, Y13, Y13      \
	BF16CONSTS                      \
loop:                               \
	BF2PD((SI), X0, Y0)             \
	BF2PD(8(SI), X1, Y1)            \
	VMULPD      Y14, Y0, Y0         \
	VMULPD      Y14, Y1, Y1         \
	VADDPD      Y15, Y0, Y0         \
	VADDPD      Y15, Y1, Y1         \
	VCVTPD2PSY  Y0, X0              \
	VCVTPD2PSY  Y1, X1              \
	VINSERTF128 $1, X1, Y0, Y0      \
	POST                            \
	BF16STORE8(Y0, (DI), Y2, X2, Y3, Y4) \
	ADDQ        $16, SI             \
	ADDQ        $16, DI             \
	SUBQ        $8, CX              \
	JNZ         loop                \
	VZEROUPPER                      \
	RET

#define NOPOST
#define RELUPOST VMAXPS Y13, Y0, Y0

AFFINEBF16(·normAffineBF16, NOPOST)
AFFINEBF16(·normAffineReluBF16, RELUPOST)

// func normGradBF16(dx, dy, x *uint16, n int, mu, a, b, c float64): as
// normGradF32.
TEXT ·normGradBF16(SB), NOSPLIT, $0-64
	MOVQ         dx+0(FP), DI
	MOVQ         dy+8(FP), SI
	MOVQ         x+16(FP), DX
	MOVQ         n+24(FP), CX
	VBROADCASTSD mu+32(FP), Y13
	VBROADCASTSD a+40(FP), Y14
	VBROADCASTSD b+48(FP), Y15
	VBROADCASTSD c+56(FP), Y7
	BF16CONSTS

gradb_loop:
	BF2PD((SI), X0, Y0)
	BF2PD(8(SI), X1, Y1)
	BF2PD((DX), X2, Y2)
	BF2PD(8(DX), X3, Y3)
	VSUBPD Y13, Y2, Y2
	VSUBPD Y13, Y3, Y3
	VMULPD Y15, Y2, Y2
	VMULPD Y15, Y3, Y3
	VADDPD Y7, Y2, Y2
	VADDPD Y7, Y3, Y3
	VMULPD Y14, Y0, Y0
	VMULPD Y14, Y1, Y1
	VADDPD Y2, Y0, Y0
	VADDPD Y3, Y1, Y1
	PD2BF((DI))
	ADDQ   $16, SI
	ADDQ   $16, DX
	ADDQ   $16, DI
	SUBQ   $8, CX
	JNZ    gradb_loop
	VZEROUPPER
	RET
