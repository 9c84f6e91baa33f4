//go:build amd64 && !noasm

#include "textflag.h"

// The scalars, by offset in adamScalars (float64 each): 0 decay,
// 8 coupled, 16 β1, 24 1−β1, 32 β2, 40 1−β2, 48 √(1−β2^t), 56 eps,
// 64 stepSize. Pointers: DI p, SI g, DX m, R9 v; CX counts elements.

// ADAMLANE updates the elements at byte offset OFF of p, g, m and v: it
// widens them into registers P, G, M, V (float64), with T as scratch,
// computes in adamUpdateRun's order, and stores p, m and v narrowed through PW,
// MW and VW (the lower halves of P, M and V).
#define ADAMLANE(OFF, P, G, M, V, T, PW, MW, VW) \
	VCVTPS2PD OFF(DI), P    \
	VCVTPS2PD OFF(SI), G    \
	VCVTPS2PD OFF(DX), M    \
	VCVTPS2PD OFF(R9), V    \
	VMULPD    K0D, P, P     \
	VMULPD    P, K1C, T     \
	VADDPD    T, G, G       \
	VMULPD    M, K2B1, M    \
	VMULPD    G, K3C1, T    \
	VADDPD    T, M, M       \
	VMULPD    V, K4B2, V    \
	VMULPD    G, K5C2, T    \
	VMULPD    G, T, T       \
	VADDPD    T, V, V       \
	VSQRTPD   V, T          \
	VDIVPD    K6BC, T, T    \
	VADDPD    K7EPS, T, T   \
	VMULPD    M, K8STEP, G  \
	VDIVPD    T, G, G       \
	VSUBPD    G, P, P       \
	NARROW(P, PW)           \
	NARROW(M, MW)           \
	NARROW(V, VW)           \
	STORE(PW, OFF(DI))      \
	STORE(MW, OFF(DX))      \
	STORE(VW, OFF(R9))

#define LOADARGS \
	MOVQ p+0(FP), DI  \
	MOVQ gr+8(FP), SI  \
	MOVQ m+16(FP), DX \
	MOVQ v+24(FP), R9 \
	MOVQ n+32(FP), CX \
	MOVQ c+40(FP), R8

// SGDARGS loads sgdF32's arguments: the scalars at offsets 0 lr, 8 λ,
// 16 μ, 24 1−τ (float64) and the flags at 32 first, 40 nesterov, 48 hasBuf.
#define SGDARGS \
	MOVQ         p+0(FP), DI  \
	MOVQ         gr+8(FP), SI \
	MOVQ         buf+16(FP), DX \
	MOVQ         n+24(FP), CX \
	MOVQ         c+32(FP), R8 \
	VBROADCASTSD 0(R8), KLR   \
	VBROADCASTSD 8(R8), KWD   \
	VBROADCASTSD 16(R8), KMU  \
	VBROADCASTSD 24(R8), KC   \
	MOVQ         32(R8), R10  \
	MOVQ         40(R8), R11  \
	MOVQ         48(R8), R12

// LOADSCALARS broadcasts the scalars at R8 into the registers K0D…K8STEP
// name (each loop defines them).
#define LOADSCALARS \
	VBROADCASTSD 0(R8), K0D    \
	VBROADCASTSD 8(R8), K1C    \
	VBROADCASTSD 16(R8), K2B1  \
	VBROADCASTSD 24(R8), K3C1  \
	VBROADCASTSD 32(R8), K4B2  \
	VBROADCASTSD 40(R8), K5C2  \
	VBROADCASTSD 48(R8), K6BC  \
	VBROADCASTSD 56(R8), K7EPS \
	VBROADCASTSD 64(R8), K8STEP

// ADAMLOOP is a whole Adam function: arguments, scalars, then two lanes
// (the second HALF bytes on) per iteration of STEP elements, BYTES bytes
// of float32, with the registers of ADAMLANE (renaming overlaps the lanes).
#define ADAMLOOP(P, G, M, V, T, PW, MW, VW, HALF, BYTES, STEP) \
	LOADARGS                                   \
	LOADSCALARS                                \
adam_loop:                                     \
	ADAMLANE(0, P, G, M, V, T, PW, MW, VW)     \
	ADAMLANE(HALF, P, G, M, V, T, PW, MW, VW)  \
	ADDQ $BYTES, DI                            \
	ADDQ $BYTES, SI                            \
	ADDQ $BYTES, DX                            \
	ADDQ $BYTES, R9                            \
	SUBQ $STEP, CX                             \
	JNZ  adam_loop                             \
	VZEROUPPER                                 \
	RET

// func adamF32AVX512(p, gr, m, v *float32, n int, c *adamScalars)
#define K0D Z16
#define K1C Z17
#define K2B1 Z18
#define K3C1 Z19
#define K4B2 Z20
#define K5C2 Z21
#define K6BC Z22
#define K7EPS Z23
#define K8STEP Z24
#define NARROW(R, W) VCVTPD2PS R, W
#define STORE(W, M) VMOVUPS W, M
TEXT ·adamF32AVX512(SB), NOSPLIT, $0-48
	ADAMLOOP(Z0, Z1, Z2, Z3, Z4, Y0, Y2, Y3, 32, 64, 16)

#undef K0D
#undef K1C
#undef K2B1
#undef K3C1
#undef K4B2
#undef K5C2
#undef K6BC
#undef K7EPS
#undef K8STEP
#undef NARROW

// func adamF32AVX2(p, gr, m, v *float32, n int, c *adamScalars)
#define K0D Y7
#define K1C Y13
#define K2B1 Y14
#define K3C1 Y15
#define K4B2 Y5
#define K5C2 Y6
#define K6BC Y12
#define K7EPS Y4
#define K8STEP Y11
#define NARROW(R, W) VCVTPD2PSY R, W
TEXT ·adamF32AVX2(SB), NOSPLIT, $0-48
	ADAMLOOP(Y0, Y1, Y2, Y3, Y8, X0, X2, X3, 16, 32, 8)

// SGDLOOP is sgdUpdateRun over CX elements, STEP (BYTES bytes of float32)
// per iteration, with P, G, B and T float64 registers (PW, TW their lower
// halves); the scalars are in KLR, KWD, KMU, KC and the flags first,
// nesterov and hasBuf in R10, R11, R12. DX (buf) is read unless first and
// written with hasBuf.
#define SGDLOOP(P, G, B, T, PW, TW, STEP, BYTES) \
sgd_loop:                   \
	VCVTPS2PD (DI), P       \
	VCVTPS2PD (SI), G       \
	VMULPD    P, KWD, T     \
	VADDPD    T, G, G       \
	VMOVAPD   G, B          \
	TESTQ     R10, R10      \
	JNZ       sgd_buf       \
	VCVTPS2PD (DX), B       \
	VMULPD    B, KMU, B     \
	VMULPD    G, KC, T      \
	VADDPD    T, B, B       \
sgd_buf:                    \
	TESTQ     R12, R12      \
	JZ        sgd_d         \
	NARROW(B, TW)           \
	STORE(TW, (DX))         \
sgd_d:                      \
	TESTQ     R11, R11      \
	JZ        sgd_p         \
	VMULPD    B, KMU, B     \
	VADDPD    B, G, B       \
sgd_p:                      \
	VMULPD    B, KLR, B     \
	VSUBPD    B, P, P       \
	NARROW(P, PW)           \
	STORE(PW, (DI))         \
	ADDQ      $BYTES, DI    \
	ADDQ      $BYTES, SI    \
	ADDQ      $BYTES, DX    \
	SUBQ      $STEP, CX     \
	JNZ       sgd_loop      \
	VZEROUPPER              \
	RET

// func sgdF32AVX2(p, gr, buf *float32, n int, c *sgdScalars)
#define KLR Y12
#define KWD Y13
#define KMU Y14
#define KC Y15
TEXT ·sgdF32AVX2(SB), NOSPLIT, $0-40
	SGDARGS
	SGDLOOP(Y0, Y1, Y2, Y3, X0, X3, 4, 16)

#undef KLR
#undef KWD
#undef KMU
#undef KC
#undef NARROW
#define NARROW(R, W) VCVTPD2PS R, W

// func sgdF32AVX512(p, gr, buf *float32, n int, c *sgdScalars)
#define KLR Z16
#define KWD Z17
#define KMU Z18
#define KC Z19
TEXT ·sgdF32AVX512(SB), NOSPLIT, $0-40
	SGDARGS
	SGDLOOP(Z0, Z1, Z2, Z3, Y0, Y3, 8, 32)
