//go:build amd64 && !noasm

#include "textflag.h"
#include "gemm_half_out_amd64.h"

// AVX-512 twins of the bfloat16 batch-norm loops of norm_amd64.s (…BF16),
// for norm_half.go: the same float64 operations in the same order, eight
// float64 lanes to a register instead of four, so every sum lane and
// every output gets the same bits; the bfloat16 outputs are rounded from
// float32 sixteen at a time with mask registers instead of VPBLENDVB. n is
// a positive multiple of 16.

// ZLD8 widens the 8 bfloat16 at m to the float64 in z (y scratch, z's
// register number or any other).
#define ZLD8(m, y, z) VPMOVZXWD m, y; VPSLLD $16, y, y; VCVTPS2PD y, z

// ZSTORE16 rounds the float64 in Z0 (elements 0–7) and Z1 (8–15) to
// float32, then to bfloat16 as BF16ROUND does ((x + 0x7fff + ((x>>16)&1))
// >> 16, or (x>>16) | 0x40 where x is a NaN), after POST, and stores the
// 16 results (32 bytes) at (DI). Z2..Z4 and K1 are scratch.
#define ZSTORE16 \
	VCVTPD2PS    Z0, Y0           \
	VCVTPD2PS    Z1, Y1           \
	VINSERTF64X4 $1, Y1, Z0, Z0   \
	POST                          \
	VPSRLD       $16, Z0, Z2      \
	VPANDD       Z9, Z2, Z3       \
	VPADDD       Z8, Z3, Z3       \
	VPADDD       Z0, Z3, Z3       \
	VPSRLD       $16, Z3, Z3      \
	VPORD        Z10, Z2, Z2      \
	VPANDD       Z11, Z0, Z4      \
	VPCMPGTD     Z12, Z4, K1      \
	VMOVDQA32    Z2, K1, Z3       \
	VPMOVDW      Z3, (DI)

#define POST

// func vecSumBF16Z(s *uint16, n int, acc *[16]float64): acc[j] +=
// s[16q+j] in float64, in order of q.
TEXT ·vecSumBF16Z(SB), NOSPLIT, $0-24
	MOVQ    s+0(FP), SI
	MOVQ    n+8(FP), CX
	MOVQ    acc+16(FP), DI
	VMOVUPD (DI), Z0
	VMOVUPD 64(DI), Z1
sumloop:
	ZLD8((SI), Y4, Z4)
	ZLD8(16(SI), Y5, Z5)
	VADDPD  Z4, Z0, Z0
	VADDPD  Z5, Z1, Z1
	ADDQ    $32, SI
	SUBQ    $16, CX
	JNZ     sumloop
	VMOVUPD Z0, (DI)
	VMOVUPD Z1, 64(DI)
	VZEROUPPER
	RET

// func normSqDevBF16Z(x *uint16, n int, mu float64, acc *[16]float64):
// acc[j] += (x[16q+j] − mu)², in order of q.
TEXT ·normSqDevBF16Z(SB), NOSPLIT, $0-32
	MOVQ         x+0(FP), SI
	MOVQ         n+8(FP), CX
	VBROADCASTSD mu+16(FP), Z15
	MOVQ         acc+24(FP), DI
	VMOVUPD      (DI), Z0
	VMOVUPD      64(DI), Z1
sqloop:
	ZLD8((SI), Y4, Z4)
	ZLD8(16(SI), Y5, Z5)
	VSUBPD       Z15, Z4, Z4
	VSUBPD       Z15, Z5, Z5
	VMULPD       Z4, Z4, Z4
	VMULPD       Z5, Z5, Z5
	VADDPD       Z4, Z0, Z0
	VADDPD       Z5, Z1, Z1
	ADDQ         $32, SI
	SUBQ         $16, CX
	JNZ          sqloop
	VMOVUPD      Z0, (DI)
	VMOVUPD      Z1, 64(DI)
	VZEROUPPER
	RET

// func normDotDevBF16Z(dy, x *uint16, n int, mu float64, a, ax
// *[8]float64): a[j] += dy[8q+j] and ax[j] += dy[8q+j]·(x[8q+j] − mu), in
// order of q (two q per iteration, one after the other).
TEXT ·normDotDevBF16Z(SB), NOSPLIT, $0-48
	MOVQ         dy+0(FP), SI
	MOVQ         x+8(FP), DX
	MOVQ         n+16(FP), CX
	VBROADCASTSD mu+24(FP), Z15
	MOVQ         a+32(FP), DI
	MOVQ         ax+40(FP), R8
	VMOVUPD      (DI), Z0
	VMOVUPD      (R8), Z1
dotloop:
	ZLD8((SI), Y4, Z4)
	ZLD8(16(SI), Y5, Z5)
	ZLD8((DX), Y6, Z6)
	ZLD8(16(DX), Y7, Z7)
	VSUBPD       Z15, Z6, Z6
	VSUBPD       Z15, Z7, Z7
	VMULPD       Z4, Z6, Z6
	VMULPD       Z5, Z7, Z7
	VADDPD       Z4, Z0, Z0
	VADDPD       Z6, Z1, Z1
	VADDPD       Z5, Z0, Z0
	VADDPD       Z7, Z1, Z1
	ADDQ         $32, SI
	ADDQ         $32, DX
	SUBQ         $16, CX
	JNZ          dotloop
	VMOVUPD      Z0, (DI)
	VMOVUPD      Z1, (R8)
	VZEROUPPER
	RET

// AFFINEZ defines func name(y, x *uint16, n int, scale, shift float64):
// y = bf16(f32(float64(x)·scale + shift)), the product rounded first.
#define AFFINEZ(name) \
TEXT name(SB), NOSPLIT, $0-40 \
	MOVQ         y+0(FP), DI        \
	MOVQ         x+8(FP), SI        \
	MOVQ         n+16(FP), CX       \
	VBROADCASTSD scale+24(FP), Z14  \
	VBROADCASTSD shift+32(FP), Z15  \
	VPXORD       Z13, Z13, Z13      \
	NARROWCONSTS                    \
affloop:                            \
	ZLD8((SI), Y0, Z0)              \
	ZLD8(16(SI), Y1, Z1)            \
	VMULPD       Z14, Z0, Z0        \
	VMULPD       Z14, Z1, Z1        \
	VADDPD       Z15, Z0, Z0        \
	VADDPD       Z15, Z1, Z1        \
	ZSTORE16                        \
	ADDQ         $32, SI            \
	ADDQ         $32, DI            \
	SUBQ         $16, CX            \
	JNZ          affloop            \
	VZEROUPPER                      \
	RET

AFFINEZ(·normAffineBF16Z)

// normAffineReluBF16Z is normAffineBF16Z with ReLU (VMAXPS against the
// zeros in Z13: +0 for NaN and -0) applied to the float32 results before
// they are rounded to bfloat16.
#undef POST
#define POST VMAXPS Z13, Z0, Z0
AFFINEZ(·normAffineReluBF16Z)
#undef POST
#define POST

// func normGradBF16Z(dx, dy, x *uint16, n int, mu, a, b, c float64):
// dx = bf16(f32(a·dy + (b·(x − mu) + c))), every operation rounded.
TEXT ·normGradBF16Z(SB), NOSPLIT, $0-64
	MOVQ         dx+0(FP), DI
	MOVQ         dy+8(FP), SI
	MOVQ         x+16(FP), DX
	MOVQ         n+24(FP), CX
	VBROADCASTSD mu+32(FP), Z13
	VBROADCASTSD a+40(FP), Z14
	VBROADCASTSD b+48(FP), Z15
	VBROADCASTSD c+56(FP), Z7
	NARROWCONSTS
gradloop:
	ZLD8((SI), Y0, Z0)
	ZLD8(16(SI), Y1, Z1)
	ZLD8((DX), Y5, Z5)
	ZLD8(16(DX), Y6, Z6)
	VSUBPD       Z13, Z5, Z5
	VSUBPD       Z13, Z6, Z6
	VMULPD       Z15, Z5, Z5
	VMULPD       Z15, Z6, Z6
	VADDPD       Z7, Z5, Z5
	VADDPD       Z7, Z6, Z6
	VMULPD       Z14, Z0, Z0
	VMULPD       Z14, Z1, Z1
	VADDPD       Z5, Z0, Z0
	VADDPD       Z6, Z1, Z1
	ZSTORE16
	ADDQ         $32, SI
	ADDQ         $32, DX
	ADDQ         $32, DI
	SUBQ         $16, CX
	JNZ          gradloop
	VZEROUPPER
	RET
