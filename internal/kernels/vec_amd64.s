//go:build amd64 && !noasm

#include "textflag.h"

// Every loop does 32 float32 (128 bytes) per iteration while it can, then
// 8 at a time; the Go callers hand over multiples of 8 only.

// BINARY defines func name(d, a, b *float32, n int): d = a OP b, stored
// with ST (VMOVUPS, or VMOVNTPS for the non-temporal variants, whose d
// must be 32-byte aligned; FIN is then SFENCE).
#define BINARY(name, OP, ST, FIN) \
TEXT name(SB), NOSPLIT, $0-32 \
	MOVQ d+0(FP), DI      \
	MOVQ a+8(FP), SI      \
	MOVQ b+16(FP), DX     \
	MOVQ n+24(FP), CX     \
	CMPQ CX, $32          \
	JB   tail             \
loop32:                   \
	VMOVUPS (SI), Y0      \
	VMOVUPS 32(SI), Y1    \
	VMOVUPS 64(SI), Y2    \
	VMOVUPS 96(SI), Y3    \
	OP      (DX), Y0, Y0  \
	OP      32(DX), Y1, Y1 \
	OP      64(DX), Y2, Y2 \
	OP      96(DX), Y3, Y3 \
	ST      Y0, (DI)      \
	ST      Y1, 32(DI)    \
	ST      Y2, 64(DI)    \
	ST      Y3, 96(DI)    \
	ADDQ    $128, SI      \
	ADDQ    $128, DX      \
	ADDQ    $128, DI      \
	SUBQ    $32, CX       \
	CMPQ    CX, $32       \
	JAE     loop32        \
tail:                     \
	TESTQ CX, CX          \
	JZ    done            \
loop8:                    \
	VMOVUPS (SI), Y0      \
	OP      (DX), Y0, Y0  \
	ST      Y0, (DI)      \
	ADDQ    $32, SI       \
	ADDQ    $32, DX       \
	ADDQ    $32, DI       \
	SUBQ    $8, CX        \
	JNZ     loop8         \
done:                     \
	FIN                   \
	VZEROUPPER            \
	RET

#define NOFENCE

BINARY(·vecAddF32, VADDPS, VMOVUPS, NOFENCE)
BINARY(·vecSubF32, VSUBPS, VMOVUPS, NOFENCE)
BINARY(·vecMulF32, VMULPS, VMOVUPS, NOFENCE)
BINARY(·vecAddF32NT, VADDPS, VMOVNTPS, SFENCE)
BINARY(·vecSubF32NT, VSUBPS, VMOVNTPS, SFENCE)
BINARY(·vecMulF32NT, VMULPS, VMOVNTPS, SFENCE)

// func vecAxpyF32(y, x *float32, alpha float32, n int): y += alpha*x, the
// product rounded before the sum.
TEXT ·vecAxpyF32(SB), NOSPLIT, $0-32
	MOVQ         y+0(FP), DI
	MOVQ         x+8(FP), SI
	VBROADCASTSS alpha+16(FP), Y15
	MOVQ         n+24(FP), CX
	CMPQ         CX, $32
	JB           axpy_tail

axpy_loop32:
	VMULPS  (SI), Y15, Y0
	VMULPS  32(SI), Y15, Y1
	VMULPS  64(SI), Y15, Y2
	VMULPS  96(SI), Y15, Y3
	VADDPS  (DI), Y0, Y0
	VADDPS  32(DI), Y1, Y1
	VADDPS  64(DI), Y2, Y2
	VADDPS  96(DI), Y3, Y3
	VMOVUPS Y0, (DI)
	VMOVUPS Y1, 32(DI)
	VMOVUPS Y2, 64(DI)
	VMOVUPS Y3, 96(DI)
	ADDQ    $128, SI
	ADDQ    $128, DI
	SUBQ    $32, CX
	CMPQ    CX, $32
	JAE     axpy_loop32

axpy_tail:
	TESTQ CX, CX
	JZ    axpy_done

axpy_loop8:
	VMULPS  (SI), Y15, Y0
	VADDPS  (DI), Y0, Y0
	VMOVUPS Y0, (DI)
	ADDQ    $32, SI
	ADDQ    $32, DI
	SUBQ    $8, CX
	JNZ     axpy_loop8

axpy_done:
	VZEROUPPER
	RET

// UNARY defines func name(d, s *float32, ..., n int) with the loop body
// OP(src, dst) applied per vector and the result stored with ST; setup
// prepares constants, FIN ends (as in BINARY). argn is the frame offset
// of n.
#define UNARY(name, frame, argn, setup, OP, ST, FIN) \
TEXT name(SB), NOSPLIT, frame \
	MOVQ d+0(FP), DI      \
	MOVQ s+8(FP), SI      \
	MOVQ argn(FP), CX     \
	setup                 \
	CMPQ CX, $32          \
	JB   tail             \
loop32:                   \
	OP((SI), Y0)          \
	OP(32(SI), Y1)        \
	OP(64(SI), Y2)        \
	OP(96(SI), Y3)        \
	ST      Y0, (DI)      \
	ST      Y1, 32(DI)    \
	ST      Y2, 64(DI)    \
	ST      Y3, 96(DI)    \
	ADDQ    $128, SI      \
	ADDQ    $128, DI      \
	SUBQ    $32, CX       \
	CMPQ    CX, $32       \
	JAE     loop32        \
tail:                     \
	TESTQ CX, CX          \
	JZ    done            \
loop8:                    \
	OP((SI), Y0)          \
	ST      Y0, (DI)      \
	ADDQ    $32, SI       \
	ADDQ    $32, DI       \
	SUBQ    $8, CX        \
	JNZ     loop8         \
done:                     \
	FIN                   \
	VZEROUPPER            \
	RET

#define SCALESETUP VBROADCASTSS alpha+16(FP), Y15
#define SCALEOP(m, r) VMULPS m, Y15, r

// func vecScaleF32(d, s *float32, alpha float32, n int): d = s*alpha.
UNARY(·vecScaleF32, $0-32, n+24, SCALESETUP, SCALEOP, VMOVUPS, NOFENCE)
UNARY(·vecScaleF32NT, $0-32, n+24, SCALESETUP, SCALEOP, VMOVNTPS, SFENCE)

// VMAXPS returns its second source (zero) unless the first is greater, so
// NaN and -0 give +0, as the Go loop does.
#define RELUSETUP VXORPS Y15, Y15, Y15
#define RELUOP(m, r) VMAXPS Y15, m, r

// func vecReluF32(d, s *float32, n int): d = s > 0 ? s : +0.
// (VMAXPS takes its memory operand as the first source here, so load it.)
#define RELULOAD(m, r) VMOVUPS m, r; VMAXPS Y15, r, r
UNARY(·vecReluF32, $0-24, n+16, RELUSETUP, RELULOAD, VMOVUPS, NOFENCE)
UNARY(·vecReluF32NT, $0-24, n+16, RELUSETUP, RELULOAD, VMOVNTPS, SFENCE)

// RELUGRAD defines func name(dx, dy, y *float32, n int): dx = y > 0 ? dy
// : +0. The compare is 0 < y, ordered and quiet (LT_OQ), so a NaN y gives
// +0. ST and FIN as in BINARY.
#define RELUGRAD(name, ST, FIN) \
TEXT name(SB), NOSPLIT, $0-32 \
	MOVQ   dx+0(FP), DI       \
	MOVQ   dy+8(FP), SI       \
	MOVQ   y+16(FP), DX       \
	MOVQ   n+24(FP), CX       \
	VXORPS Y15, Y15, Y15      \
	CMPQ   CX, $32            \
	JB     tail               \
loop32:                       \
	VCMPPS  $0x11, (DX), Y15, Y0   \
	VCMPPS  $0x11, 32(DX), Y15, Y1 \
	VCMPPS  $0x11, 64(DX), Y15, Y2 \
	VCMPPS  $0x11, 96(DX), Y15, Y3 \
	VANDPS  (SI), Y0, Y0      \
	VANDPS  32(SI), Y1, Y1    \
	VANDPS  64(SI), Y2, Y2    \
	VANDPS  96(SI), Y3, Y3    \
	ST      Y0, (DI)          \
	ST      Y1, 32(DI)        \
	ST      Y2, 64(DI)        \
	ST      Y3, 96(DI)        \
	ADDQ    $128, SI          \
	ADDQ    $128, DX          \
	ADDQ    $128, DI          \
	SUBQ    $32, CX           \
	CMPQ    CX, $32           \
	JAE     loop32            \
tail:                         \
	TESTQ CX, CX              \
	JZ    done                \
loop8:                        \
	VCMPPS  $0x11, (DX), Y15, Y0 \
	VANDPS  (SI), Y0, Y0      \
	ST      Y0, (DI)          \
	ADDQ    $32, SI           \
	ADDQ    $32, DX           \
	ADDQ    $32, DI           \
	SUBQ    $8, CX            \
	JNZ     loop8             \
done:                         \
	FIN                       \
	VZEROUPPER                \
	RET

RELUGRAD(·vecReluGradF32, VMOVUPS, NOFENCE)
RELUGRAD(·vecReluGradF32NT, VMOVNTPS, SFENCE)

// FILL defines func name(b *byte, pat *[32]byte, n int): n bytes, a
// multiple of 32, set to copies of pat. ST and FIN as in BINARY.
#define FILL(name, ST, FIN) \
TEXT name(SB), NOSPLIT, $0-24 \
	MOVQ    b+0(FP), DI    \
	MOVQ    pat+8(FP), SI  \
	MOVQ    n+16(FP), CX   \
	VMOVDQU (SI), Y0       \
	CMPQ    CX, $128       \
	JB      tail           \
loop128:                   \
	ST      Y0, (DI)       \
	ST      Y0, 32(DI)     \
	ST      Y0, 64(DI)     \
	ST      Y0, 96(DI)     \
	ADDQ    $128, DI       \
	SUBQ    $128, CX       \
	CMPQ    CX, $128       \
	JAE     loop128        \
tail:                      \
	TESTQ CX, CX           \
	JZ    done             \
loop32:                    \
	ST      Y0, (DI)       \
	ADDQ    $32, DI        \
	SUBQ    $32, CX        \
	JNZ     loop32         \
done:                      \
	FIN                    \
	VZEROUPPER             \
	RET

FILL(·vecFill32B, VMOVDQU, NOFENCE)
FILL(·vecFill32BNT, VMOVNTDQ, SFENCE)

// vecSumF32 is in norm_amd64.s, with its bfloat16 twin.

// func vecSumF64(s *float64, n int, acc *[16]float64): as vecSumF32
// (norm_amd64.s).
TEXT ·vecSumF64(SB), NOSPLIT, $0-24
	MOVQ    s+0(FP), SI
	MOVQ    n+8(FP), CX
	MOVQ    acc+16(FP), DI
	VMOVUPD (DI), Y0
	VMOVUPD 32(DI), Y1
	VMOVUPD 64(DI), Y2
	VMOVUPD 96(DI), Y3

sumd_loop:
	VADDPD (SI), Y0, Y0
	VADDPD 32(SI), Y1, Y1
	VADDPD 64(SI), Y2, Y2
	VADDPD 96(SI), Y3, Y3
	ADDQ   $128, SI
	SUBQ   $16, CX
	JNZ    sumd_loop

	VMOVUPD Y0, (DI)
	VMOVUPD Y1, 32(DI)
	VMOVUPD Y2, 64(DI)
	VMOVUPD Y3, 96(DI)
	VZEROUPPER
	RET
