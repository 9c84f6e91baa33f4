//go:build amd64 && !noasm

#include "textflag.h"
#include "convert_amd64.h"

// AVX2 loops of norm.go and norm_half.go, computing in float64 with no
// fused multiply-add, so that the Go loops there give the same bits. Each
// macro below defines a loop twice: for float32 data (…F32) and for
// bfloat16 data (…BF16), whose elements are widened in registers
// (exactly, to float32 then float64) and whose outputs are rounded to
// float32 and then to bfloat16, as the float32 loop followed by a
// conversion would round them. n is a positive multiple of 16 (the sums
// of 16 lanes) or 8.
//
// Macro arguments: LD(m, x, y) widens 4 elements at m to the float64 in y
// (x is y's low half, scratch for bfloat16); E4 and E8 are the byte
// offsets of elements 4 and 8 (E12 of 12), STEP the bytes of 8 (or 16)
// elements; ST stores the float64 in Y0 and Y1 (8 results) at (DI),
// rounded (Y2..Y4 scratch); SETUP loads what ST needs.

// F2PD and BF2PD are the two LDs.
#define F2PD(m, x, y) VCVTPS2PD m, y
#define BF2PD(m, x, y) VPMOVZXWD m, x; VPSLLD $16, x, x; VCVTPS2PD x, y

// PD2F and PD2BF are the two STs.
#define PD2F \
	VCVTPD2PSY Y0, X0     \
	VCVTPD2PSY Y1, X1     \
	VMOVUPS    X0, (DI)   \
	VMOVUPS    X1, 16(DI)

#define PD2BF \
	VCVTPD2PSY  Y0, X0           \
	VCVTPD2PSY  Y1, X1           \
	VINSERTF128 $1, X1, Y0, Y0   \
	POST                         \
	BF16STORE8(Y0, (DI), Y2, X2, Y3, Y4)

#define NOSETUP
#define POST

// LOADACC and SAVEACC move the 16 sums at (DI) into Y0..Y3 and back.
#define LOADACC VMOVUPD (DI), Y0; VMOVUPD 32(DI), Y1; VMOVUPD 64(DI), Y2; VMOVUPD 96(DI), Y3
#define SAVEACC VMOVUPD Y0, (DI); VMOVUPD Y1, 32(DI); VMOVUPD Y2, 64(DI); VMOVUPD Y3, 96(DI)

// LOAD16 widens 16 elements at (SI) into Y4..Y7.
#define LOAD16(LD, E4, E8, E12) \
	LD((SI), X4, Y4)   \
	LD(E4(SI), X5, Y5) \
	LD(E8(SI), X6, Y6) \
	LD(E12(SI), X7, Y7)

// SUM defines func name(s *T, n int, acc *[16]float64): acc[j] +=
// s[16q+j] in float64, in order of q.
#define SUM(name, LD, E4, E8, E12, STEP) \
TEXT name(SB), NOSPLIT, $0-24 \
	MOVQ    s+0(FP), SI      \
	MOVQ    n+8(FP), CX      \
	MOVQ    acc+16(FP), DI   \
	LOADACC                  \
loop:                        \
	LOAD16(LD, E4, E8, E12)  \
	VADDPD  Y4, Y0, Y0       \
	VADDPD  Y5, Y1, Y1       \
	VADDPD  Y6, Y2, Y2       \
	VADDPD  Y7, Y3, Y3       \
	ADDQ    $STEP, SI        \
	SUBQ    $16, CX          \
	JNZ     loop             \
	SAVEACC                  \
	VZEROUPPER               \
	RET

SUM(·vecSumF32, F2PD, 16, 32, 48, 64)
SUM(·vecSumBF16, BF2PD, 8, 16, 24, 32)

// SQDEV defines func name(x *T, n int, mu float64, acc *[16]float64):
// acc[j] += (x[16q+j] − mu)², in order of q.
#define SQDEV(name, LD, E4, E8, E12, STEP) \
TEXT name(SB), NOSPLIT, $0-32 \
	MOVQ         x+0(FP), SI     \
	MOVQ         n+8(FP), CX     \
	VBROADCASTSD mu+16(FP), Y15  \
	MOVQ         acc+24(FP), DI  \
	LOADACC                      \
loop:                            \
	LOAD16(LD, E4, E8, E12)      \
	VSUBPD       Y15, Y4, Y4     \
	VSUBPD       Y15, Y5, Y5     \
	VSUBPD       Y15, Y6, Y6     \
	VSUBPD       Y15, Y7, Y7     \
	VMULPD       Y4, Y4, Y4      \
	VMULPD       Y5, Y5, Y5      \
	VMULPD       Y6, Y6, Y6      \
	VMULPD       Y7, Y7, Y7      \
	VADDPD       Y4, Y0, Y0      \
	VADDPD       Y5, Y1, Y1      \
	VADDPD       Y6, Y2, Y2      \
	VADDPD       Y7, Y3, Y3      \
	ADDQ         $STEP, SI       \
	SUBQ         $16, CX         \
	JNZ          loop            \
	SAVEACC                      \
	VZEROUPPER                   \
	RET

SQDEV(·normSqDevF32, F2PD, 16, 32, 48, 64)
SQDEV(·normSqDevBF16, BF2PD, 8, 16, 24, 32)

// DOTDEV defines func name(dy, x *T, n int, mu float64, a, ax
// *[8]float64): a[j] += dy[8q+j] and ax[j] += dy[8q+j]·(x[8q+j] − mu), in
// order of q.
#define DOTDEV(name, LD, E4, STEP) \
TEXT name(SB), NOSPLIT, $0-48 \
	MOVQ         dy+0(FP), SI    \
	MOVQ         x+8(FP), DX     \
	MOVQ         n+16(FP), CX    \
	VBROADCASTSD mu+24(FP), Y15  \
	MOVQ         a+32(FP), DI    \
	MOVQ         ax+40(FP), R8   \
	VMOVUPD      (DI), Y0        \
	VMOVUPD      32(DI), Y1      \
	VMOVUPD      (R8), Y2        \
	VMOVUPD      32(R8), Y3      \
loop:                            \
	LD((SI), X4, Y4)             \
	LD(E4(SI), X5, Y5)           \
	LD((DX), X6, Y6)             \
	LD(E4(DX), X7, Y7)           \
	VADDPD       Y4, Y0, Y0      \
	VADDPD       Y5, Y1, Y1      \
	VSUBPD       Y15, Y6, Y6     \
	VSUBPD       Y15, Y7, Y7     \
	VMULPD       Y4, Y6, Y6      \
	VMULPD       Y5, Y7, Y7      \
	VADDPD       Y6, Y2, Y2      \
	VADDPD       Y7, Y3, Y3      \
	ADDQ         $STEP, SI       \
	ADDQ         $STEP, DX       \
	SUBQ         $8, CX          \
	JNZ          loop            \
	VMOVUPD      Y0, (DI)        \
	VMOVUPD      Y1, 32(DI)      \
	VMOVUPD      Y2, (R8)        \
	VMOVUPD      Y3, 32(R8)      \
	VZEROUPPER                   \
	RET

DOTDEV(·normDotDevF32, F2PD, 16, 32)
DOTDEV(·normDotDevBF16, BF2PD, 8, 16)

// AFFINE defines func name(y, x *T, n int, scale, shift float64):
// y = round(float64(x)·scale + shift), the product rounded first.
#define AFFINE(name, LD, E4, STEP, ST, SETUP) \
TEXT name(SB), NOSPLIT, $0-40 \
	MOVQ         y+0(FP), DI        \
	MOVQ         x+8(FP), SI        \
	MOVQ         n+16(FP), CX       \
	VBROADCASTSD scale+24(FP), Y14  \
	VBROADCASTSD shift+32(FP), Y15  \
	VXORPS       Y13, Y13, Y13      \
	SETUP                           \
loop:                               \
	LD((SI), X0, Y0)                \
	LD(E4(SI), X1, Y1)              \
	VMULPD       Y14, Y0, Y0        \
	VMULPD       Y14, Y1, Y1        \
	VADDPD       Y15, Y0, Y0        \
	VADDPD       Y15, Y1, Y1        \
	ST                              \
	ADDQ         $STEP, SI          \
	ADDQ         $STEP, DI          \
	SUBQ         $8, CX             \
	JNZ          loop               \
	VZEROUPPER                      \
	RET

AFFINE(·normAffineF32, F2PD, 16, 32, PD2F, NOSETUP)
AFFINE(·normAffineBF16, BF2PD, 8, 16, PD2BF, BF16CONSTS)

// normAffineReluBF16 is normAffineBF16 with ReLU (VMAXPS against the
// zeros in Y13: +0 for NaN and -0) applied to the float32 results before
// they are rounded to bfloat16.
#undef POST
#define POST VMAXPS Y13, Y0, Y0
AFFINE(·normAffineReluBF16, BF2PD, 8, 16, PD2BF, BF16CONSTS)
#undef POST
#define POST

// GRAD defines func name(dx, dy, x *T, n int, mu, a, b, c float64):
// dx = round(a·dy + (b·(x − mu) + c)), every operation rounded.
#define GRAD(name, LD, E4, STEP, ST, SETUP) \
TEXT name(SB), NOSPLIT, $0-64 \
	MOVQ         dx+0(FP), DI    \
	MOVQ         dy+8(FP), SI    \
	MOVQ         x+16(FP), DX    \
	MOVQ         n+24(FP), CX    \
	VBROADCASTSD mu+32(FP), Y13  \
	VBROADCASTSD a+40(FP), Y14   \
	VBROADCASTSD b+48(FP), Y15   \
	VBROADCASTSD c+56(FP), Y7    \
	SETUP                        \
loop:                            \
	LD((SI), X0, Y0)             \
	LD(E4(SI), X1, Y1)           \
	LD((DX), X2, Y2)             \
	LD(E4(DX), X3, Y3)           \
	VSUBPD       Y13, Y2, Y2     \
	VSUBPD       Y13, Y3, Y3     \
	VMULPD       Y15, Y2, Y2     \
	VMULPD       Y15, Y3, Y3     \
	VADDPD       Y7, Y2, Y2      \
	VADDPD       Y7, Y3, Y3      \
	VMULPD       Y14, Y0, Y0     \
	VMULPD       Y14, Y1, Y1     \
	VADDPD       Y2, Y0, Y0      \
	VADDPD       Y3, Y1, Y1      \
	ST                           \
	ADDQ         $STEP, SI       \
	ADDQ         $STEP, DX       \
	ADDQ         $STEP, DI       \
	SUBQ         $8, CX          \
	JNZ          loop            \
	VZEROUPPER                   \
	RET

GRAD(·normGradF32, F2PD, 16, 32, PD2F, NOSETUP)
GRAD(·normGradBF16, BF2PD, 8, 16, PD2BF, BF16CONSTS)

// LNSUMS4 is one group of 4 elements of lnGradSumsF32 at byte offsets
// f (float32) and d (float64): h = (x − mu)·is, aw += g·h, ab += g,
// g = g·w, SG += g, SGX += g·h (g = dy widened), lanes in element order.
#define LNSUMS4(f, d, SG, SGX) \
	VCVTPS2PD f(SI), Y8       \
	VCVTPS2PD f(DX), Y9       \
	VSUBPD    Y14, Y9, Y9     \
	VMULPD    Y15, Y9, Y9     \
	VMULPD    Y9, Y8, Y10     \
	VADDPD    d(R8), Y10, Y10 \
	VMOVUPD   Y10, d(R8)      \
	VADDPD    d(R9), Y8, Y11  \
	VMOVUPD   Y11, d(R9)      \
	VCVTPS2PD f(BX), Y12      \
	VMULPD    Y12, Y8, Y8     \
	VADDPD    Y8, SG, SG      \
	VMULPD    Y9, Y8, Y8      \
	VADDPD    Y8, SGX, SGX

// func lnGradSumsF32(dy, x, w *float32, aw, ab *float64, n int, mu, is float64, sg, sgx *[16]float64)
//
// layerNormGradRow's first loop over n (a positive multiple of 16)
// float32 elements: the 16 lanes of sg and sgx in Y0–Y3 and Y4–Y7.
TEXT ·lnGradSumsF32(SB), NOSPLIT, $0-80
	MOVQ         dy+0(FP), SI
	MOVQ         x+8(FP), DX
	MOVQ         w+16(FP), BX
	MOVQ         aw+24(FP), R8
	MOVQ         ab+32(FP), R9
	MOVQ         n+40(FP), CX
	VBROADCASTSD mu+48(FP), Y14
	VBROADCASTSD is+56(FP), Y15
	MOVQ         sg+64(FP), DI
	LOADACC
	MOVQ         sgx+72(FP), DI
	VMOVUPD      (DI), Y4
	VMOVUPD      32(DI), Y5
	VMOVUPD      64(DI), Y6
	VMOVUPD      96(DI), Y7

lnsums:
	LNSUMS4(0, 0, Y0, Y4)
	LNSUMS4(16, 32, Y1, Y5)
	LNSUMS4(32, 64, Y2, Y6)
	LNSUMS4(48, 96, Y3, Y7)
	ADDQ $64, SI
	ADDQ $64, DX
	ADDQ $64, BX
	ADDQ $128, R8
	ADDQ $128, R9
	SUBQ $16, CX
	JNZ  lnsums
	VMOVUPD Y4, (DI)
	VMOVUPD Y5, 32(DI)
	VMOVUPD Y6, 64(DI)
	VMOVUPD Y7, 96(DI)
	MOVQ    sg+64(FP), DI
	SAVEACC
	VZEROUPPER
	RET

// LNDX4 is one group of 4 elements of lnGradDxF32 at byte offset f:
// dx = round(is·((g·w − mg) − ((x − mu)·is)·mgx)).
#define LNDX4(f) \
	VCVTPS2PD  f(SI), Y0    \
	VCVTPS2PD  f(BX), Y1    \
	VMULPD     Y1, Y0, Y0   \
	VSUBPD     Y12, Y0, Y0  \
	VCVTPS2PD  f(DX), Y2    \
	VSUBPD     Y14, Y2, Y2  \
	VMULPD     Y15, Y2, Y2  \
	VMULPD     Y13, Y2, Y2  \
	VSUBPD     Y2, Y0, Y0   \
	VMULPD     Y15, Y0, Y0  \
	VCVTPD2PSY Y0, X0       \
	VMOVUPS    X0, f(DI)

// func lnGradDxF32(dx, dy, x, w *float32, n int, mu, is, mg, mgx float64)
//
// layerNormGradRow's dx loop over n (a positive multiple of 8) float32
// elements.
TEXT ·lnGradDxF32(SB), NOSPLIT, $0-72
	MOVQ         dx+0(FP), DI
	MOVQ         dy+8(FP), SI
	MOVQ         x+16(FP), DX
	MOVQ         w+24(FP), BX
	MOVQ         n+32(FP), CX
	VBROADCASTSD mu+40(FP), Y14
	VBROADCASTSD is+48(FP), Y15
	VBROADCASTSD mg+56(FP), Y12
	VBROADCASTSD mgx+64(FP), Y13

lndx:
	LNDX4(0)
	LNDX4(16)
	ADDQ $32, SI
	ADDQ $32, DX
	ADDQ $32, BX
	ADDQ $32, DI
	SUBQ $8, CX
	JNZ  lndx
	VZEROUPPER
	RET

// LNROW4 is one group of 4 elements of lnRowF32 at byte offset f:
// y = round(((x − mu)·is)·w + b).
#define LNROW4(f) \
	VCVTPS2PD  f(SI), Y0    \
	VSUBPD     Y14, Y0, Y0  \
	VMULPD     Y15, Y0, Y0  \
	VCVTPS2PD  f(DX), Y1    \
	VMULPD     Y1, Y0, Y0   \
	VCVTPS2PD  f(BX), Y2    \
	VADDPD     Y2, Y0, Y0   \
	VCVTPD2PSY Y0, X0       \
	VMOVUPS    X0, f(DI)

// func lnRowF32(y, x, w, b *float32, n int, mu, is float64)
//
// layerNormRow's loop with w and b over n (a positive multiple of 8)
// float32 elements.
TEXT ·lnRowF32(SB), NOSPLIT, $0-56
	MOVQ         y+0(FP), DI
	MOVQ         x+8(FP), SI
	MOVQ         w+16(FP), DX
	MOVQ         b+24(FP), BX
	MOVQ         n+32(FP), CX
	VBROADCASTSD mu+40(FP), Y14
	VBROADCASTSD is+48(FP), Y15

lnrow:
	LNROW4(0)
	LNROW4(16)
	ADDQ $32, SI
	ADDQ $32, DX
	ADDQ $32, BX
	ADDQ $32, DI
	SUBQ $8, CX
	JNZ  lnrow
	VZEROUPPER
	RET
