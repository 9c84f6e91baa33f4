//go:build amd64 && !noasm

#include "textflag.h"

// philoxBlocks16AVX512 computes Philox4x32-10 for 16 consecutive counters
// per iteration: two groups of eight blocks, each block word in the low
// half of a qword lane (VPMULUDQ multiplies those halves into the 64-bit
// products of a round). Upper halves of the lanes carry garbage that never
// reaches a low half: rounds only XOR lanes and multiply their low halves,
// and the output takes low halves only.
//
// Registers: Z0–Z3 and Z4–Z7 the words of the two groups, Z8–Z11 products
// and temporaries, Z16/Z17 the multipliers, Z18/Z19 the key increments,
// Z20/Z21 the key, Z22/Z23 the running round key, Z24/Z25 counter words 2
// and 3, Z26 the first counter of the iteration, Z27/Z28 the lane offsets
// 0–7 and 8–15, Z29 sixteen, Z30/Z31 the qword interleave indices, K1 the
// odd-dword mask.

DATA philoxIota<>+0(SB)/8, $0
DATA philoxIota<>+8(SB)/8, $1
DATA philoxIota<>+16(SB)/8, $2
DATA philoxIota<>+24(SB)/8, $3
DATA philoxIota<>+32(SB)/8, $4
DATA philoxIota<>+40(SB)/8, $5
DATA philoxIota<>+48(SB)/8, $6
DATA philoxIota<>+56(SB)/8, $7
GLOBL philoxIota<>(SB), RODATA|NOPTR, $64

// Interleave of X (pairs of words 0,1) and Y (words 2,3): block i is
// X[i], Y[i]; qword index 8+i selects Y[i].
DATA philoxLow<>+0(SB)/8, $0
DATA philoxLow<>+8(SB)/8, $8
DATA philoxLow<>+16(SB)/8, $1
DATA philoxLow<>+24(SB)/8, $9
DATA philoxLow<>+32(SB)/8, $2
DATA philoxLow<>+40(SB)/8, $10
DATA philoxLow<>+48(SB)/8, $3
DATA philoxLow<>+56(SB)/8, $11
GLOBL philoxLow<>(SB), RODATA|NOPTR, $64

DATA philoxHigh<>+0(SB)/8, $4
DATA philoxHigh<>+8(SB)/8, $12
DATA philoxHigh<>+16(SB)/8, $5
DATA philoxHigh<>+24(SB)/8, $13
DATA philoxHigh<>+32(SB)/8, $6
DATA philoxHigh<>+40(SB)/8, $14
DATA philoxHigh<>+48(SB)/8, $7
DATA philoxHigh<>+56(SB)/8, $15
GLOBL philoxHigh<>(SB), RODATA|NOPTR, $64

// One round on words c0–c3 with product registers p0, p1:
// (c0, c1, c2, c3) = (hi(M1·c2)^c1^k0, lo(M1·c2), hi(M0·c0)^c3^k1, lo(M0·c0)).
#define ROUND(c0, c1, c2, c3, p0, p1) \
	VPMULUDQ Z16, c0, p0 \
	VPMULUDQ Z17, c2, p1 \
	VPSRLQ $32, p1, c0 \
	VPTERNLOGD $0x96, Z22, c1, c0 \
	VMOVDQA64 p1, c1 \
	VPSRLQ $32, p0, c2 \
	VPTERNLOGD $0x96, Z23, c3, c2 \
	VMOVDQA64 p0, c3

// Both groups' round, then the key bump.
#define ROUNDS \
	ROUND(Z0, Z1, Z2, Z3, Z8, Z9) \
	ROUND(Z4, Z5, Z6, Z7, Z10, Z11) \
	VPADDD Z18, Z22, Z22 \
	VPADDD Z19, Z23, Z23

// Store a group's eight blocks (128 bytes) at off(DI), with t0, t1.
#define STORE(c0, c1, c2, c3, t0, t1, off) \
	VPSLLQ $32, c1, t0 \
	VPBLENDMD t0, c0, K1, t0 \
	VPSLLQ $32, c3, t1 \
	VPBLENDMD t1, c2, K1, t1 \
	VMOVDQA64 t0, c0 \
	VPERMT2Q t1, Z30, c0 \
	VPERMT2Q t1, Z31, t0 \
	VMOVDQU64 c0, off(DI) \
	VMOVDQU64 t0, off+64(DI)

// func philoxBlocks16AVX512(dst *[4]uint32, groups int, first uint64, u0, u1, k0, k1 uint32)
TEXT ·philoxBlocks16AVX512(SB), NOSPLIT, $0-40
	MOVQ dst+0(FP), DI
	MOVQ groups+8(FP), CX
	MOVQ first+16(FP), AX
	MOVL $0xD2511F53, R8
	VPBROADCASTD R8, Z16
	MOVL $0xCD9E8D57, R8
	VPBROADCASTD R8, Z17
	MOVL $0x9E3779B9, R8
	VPBROADCASTD R8, Z18
	MOVL $0xBB67AE85, R8
	VPBROADCASTD R8, Z19
	MOVL k0+32(FP), R8
	VPBROADCASTD R8, Z20
	MOVL k1+36(FP), R8
	VPBROADCASTD R8, Z21
	MOVL u0+24(FP), R8
	VPBROADCASTD R8, Z24
	MOVL u1+28(FP), R8
	VPBROADCASTD R8, Z25
	VPBROADCASTQ AX, Z26
	VMOVDQU64 philoxIota<>(SB), Z27
	MOVQ $8, R8
	VPBROADCASTQ R8, Z29
	VPADDQ Z29, Z27, Z28
	MOVQ $16, R8
	VPBROADCASTQ R8, Z29
	VMOVDQU64 philoxLow<>(SB), Z30
	VMOVDQU64 philoxHigh<>(SB), Z31
	MOVL $0xAAAA, R8
	KMOVW R8, K1

loop:
	VPADDQ Z27, Z26, Z0
	VPADDQ Z28, Z26, Z4
	VPSRLQ $32, Z0, Z1
	VPSRLQ $32, Z4, Z5
	VMOVDQA64 Z24, Z2
	VMOVDQA64 Z25, Z3
	VMOVDQA64 Z24, Z6
	VMOVDQA64 Z25, Z7
	VMOVDQA64 Z20, Z22
	VMOVDQA64 Z21, Z23
	ROUNDS
	ROUNDS
	ROUNDS
	ROUNDS
	ROUNDS
	ROUNDS
	ROUNDS
	ROUNDS
	ROUNDS
	ROUNDS
	STORE(Z0, Z1, Z2, Z3, Z8, Z9, 0)
	STORE(Z4, Z5, Z6, Z7, Z10, Z11, 128)
	VPADDQ Z29, Z26, Z26
	ADDQ $256, DI
	DECQ CX
	JNZ loop
	VZEROUPPER
	RET

// philoxBlocks8AVX2 is philoxBlocks16AVX512 for AVX2: 8 counters per
// iteration, two groups of four qword lanes (Y0–Y3, Y4–Y7), products and
// temporaries in Y8–Y11, the multipliers in Y12/Y13 and the running round
// key in Y14/Y15; the rest comes from memory.

DATA philoxConst<>+0(SB)/4, $0xD2511F53
DATA philoxConst<>+4(SB)/4, $0xCD9E8D57
DATA philoxConst<>+8(SB)/4, $0x9E3779B9
DATA philoxConst<>+12(SB)/4, $0xBB67AE85
GLOBL philoxConst<>(SB), RODATA|NOPTR, $16

// One round, as ROUND without VPTERNLOGD.
#define ROUND2(c0, c1, c2, c3, p0, p1) \
	VPMULUDQ Y12, c0, p0 \
	VPMULUDQ Y13, c2, p1 \
	VPSRLQ $32, p1, c0 \
	VPXOR c1, c0, c0 \
	VPXOR Y14, c0, c0 \
	VMOVDQA p1, c1 \
	VPSRLQ $32, p0, c2 \
	VPXOR c3, c2, c2 \
	VPXOR Y15, c2, c2 \
	VMOVDQA p0, c3

#define ROUNDS2 \
	ROUND2(Y0, Y1, Y2, Y3, Y8, Y9) \
	ROUND2(Y4, Y5, Y6, Y7, Y10, Y11) \
	VPBROADCASTD philoxConst<>+8(SB), Y8 \
	VPADDD Y8, Y14, Y14 \
	VPBROADCASTD philoxConst<>+12(SB), Y8 \
	VPADDD Y8, Y15, Y15

// Store a group's four blocks (64 bytes) at off(DI), with t0, t1.
#define STORE2(c0, c1, c2, c3, t0, t1, off) \
	VPSLLQ $32, c1, t0 \
	VPBLENDD $0xAA, t0, c0, t0 \
	VPSLLQ $32, c3, t1 \
	VPBLENDD $0xAA, t1, c2, t1 \
	VPUNPCKLQDQ t1, t0, c0 \
	VPUNPCKHQDQ t1, t0, c1 \
	VPERM2I128 $0x20, c1, c0, c2 \
	VPERM2I128 $0x31, c1, c0, c3 \
	VMOVDQU c2, off(DI) \
	VMOVDQU c3, off+32(DI)

// Counter words 0 and 1 of a group: first (AX) + lanes, its high half.
#define COUNTERS2(c0, c1, lanes) \
	VMOVQ AX, X8 \
	VPBROADCASTQ X8, c0 \
	VPADDQ lanes, c0, c0 \
	VPSRLQ $32, c0, c1

// func philoxBlocks8AVX2(dst *[4]uint32, groups int, first uint64, u0, u1, k0, k1 uint32)
TEXT ·philoxBlocks8AVX2(SB), NOSPLIT, $0-40
	MOVQ dst+0(FP), DI
	MOVQ groups+8(FP), CX
	MOVQ first+16(FP), AX
	VPBROADCASTD philoxConst<>+0(SB), Y12
	VPBROADCASTD philoxConst<>+4(SB), Y13
	MOVL u0+24(FP), R10
	MOVL u1+28(FP), R11
	MOVL k0+32(FP), R12
	MOVL k1+36(FP), R13

loop2:
	COUNTERS2(Y0, Y1, philoxIota<>+0(SB))
	COUNTERS2(Y4, Y5, philoxIota<>+32(SB))
	VMOVD R10, X2
	VPBROADCASTD X2, Y2
	VMOVD R11, X3
	VPBROADCASTD X3, Y3
	VMOVDQA Y2, Y6
	VMOVDQA Y3, Y7
	VMOVD R12, X14
	VPBROADCASTD X14, Y14
	VMOVD R13, X15
	VPBROADCASTD X15, Y15
	ROUNDS2
	ROUNDS2
	ROUNDS2
	ROUNDS2
	ROUNDS2
	ROUNDS2
	ROUNDS2
	ROUNDS2
	ROUNDS2
	ROUNDS2
	STORE2(Y0, Y1, Y2, Y3, Y8, Y9, 0)
	STORE2(Y4, Y5, Y6, Y7, Y10, Y11, 64)
	ADDQ $8, AX
	ADDQ $128, DI
	DECQ CX
	JNZ loop2
	VZEROUPPER
	RET
