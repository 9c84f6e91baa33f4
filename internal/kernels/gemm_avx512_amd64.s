//go:build !noasm && amd64

#include "textflag.h"
#include "gemm_avx512_amd64.h"

// The AVX-512 float32 GEMM micro-kernels: one 12×32 tile of C (or its
// first six rows) from a packed A micro-panel (k×12, k-major) and a packed
// B micro-panel (k×32, k-major). It is the AVX2 kernel's design at twice
// the width: the wider tile keeps the ratio of FMAs to loads that the 6×16
// one has in YMM registers.
//
// Registers: Z0..Z23 accumulate the tile, row r in Z(2r) (columns 0..15)
// and Z(2r+1) (columns 16..31); Z24, Z25 hold one row of B; Z26..Z31 take
// turns holding a broadcast element of A. Each k step is 2 loads of B, 12
// broadcasts of A and 24 independent FMAs, which covers the 4-cycle FMA
// latency on two FMA pipes with room to spare.

// ROW(ao, t, lo, hi) adds one k step to a row: A's element at ao(AX),
// broadcast into t, times B's row in Z24 and Z25.
#define ROW(ao, t, lo, hi) \
	VBROADCASTSS ao(AX), t; \
	VFMADD231PS  Z24, t, lo; \
	VFMADD231PS  Z25, t, hi

// STEP6(ao, bo) does one k step of rows 0..5 with A at ao(AX) and B at
// bo(BX); STEP does all twelve rows.
#define STEP6(ao, bo) \
	VMOVUPS (bo)(BX), Z24; \
	VMOVUPS (bo+64)(BX), Z25; \
	ROW(ao, Z26, Z0, Z1); \
	ROW(ao+4, Z27, Z2, Z3); \
	ROW(ao+8, Z28, Z4, Z5); \
	ROW(ao+12, Z29, Z6, Z7); \
	ROW(ao+16, Z30, Z8, Z9); \
	ROW(ao+20, Z31, Z10, Z11)

#define STEP(ao, bo) \
	STEP6(ao, bo); \
	ROW(ao+24, Z26, Z12, Z13); \
	ROW(ao+28, Z27, Z14, Z15); \
	ROW(ao+32, Z28, Z16, Z17); \
	ROW(ao+36, Z29, Z18, Z19); \
	ROW(ao+40, Z30, Z20, Z21); \
	ROW(ao+44, Z31, Z22, Z23)

// func sgemmKernelAVX512(k int, a, b, c *float32, ldc int, beta float32, mode int)
//
// mode 0: C = A·B; mode 1: C += A·B; mode 2: C = A·B + beta·C. ldc is in
// elements. The caller guarantees k ≥ 0, 12k floats at a, 32k at b and a
// full 12×32 tile at c.
TEXT ·sgemmKernelAVX512(SB), NOSPLIT, $0-56
	ARGS

	// Touch the C tile early so its lines arrive during the k loop.
	MOVQ DI, R8
	PREFETCHT0 (R8)
	PREFETCHT0 64(R8)
	PREFETCHT0 127(R8)
	ADDQ       SI, R8
	PREFETCHT0 (R8)
	PREFETCHT0 64(R8)
	PREFETCHT0 127(R8)
	ADDQ       SI, R8
	PREFETCHT0 (R8)
	PREFETCHT0 64(R8)
	PREFETCHT0 127(R8)
	ADDQ       SI, R8
	PREFETCHT0 (R8)
	PREFETCHT0 64(R8)
	PREFETCHT0 127(R8)
	ADDQ       SI, R8
	PREFETCHT0 (R8)
	PREFETCHT0 64(R8)
	PREFETCHT0 127(R8)
	ADDQ       SI, R8
	PREFETCHT0 (R8)
	PREFETCHT0 64(R8)
	PREFETCHT0 127(R8)
	ADDQ       SI, R8
	PREFETCHT0 (R8)
	PREFETCHT0 64(R8)
	PREFETCHT0 127(R8)
	ADDQ       SI, R8
	PREFETCHT0 (R8)
	PREFETCHT0 64(R8)
	PREFETCHT0 127(R8)
	ADDQ       SI, R8
	PREFETCHT0 (R8)
	PREFETCHT0 64(R8)
	PREFETCHT0 127(R8)
	ADDQ       SI, R8
	PREFETCHT0 (R8)
	PREFETCHT0 64(R8)
	PREFETCHT0 127(R8)
	ADDQ       SI, R8
	PREFETCHT0 (R8)
	PREFETCHT0 64(R8)
	PREFETCHT0 127(R8)
	ADDQ       SI, R8
	PREFETCHT0 (R8)
	PREFETCHT0 64(R8)
	PREFETCHT0 127(R8)

	ZERO24
	TESTQ DX, DX
	JZ    tail

loop4:
	PREFETCHT0 768(AX)
	STEP(0, 0)
	STEP(48, 128)
	STEP(96, 256)
	STEP(144, 384)
	ADDQ $192, AX
	ADDQ $512, BX
	DECQ DX
	JNZ  loop4

tail:
	ANDQ $3, CX
	JZ   store

loop1:
	STEP(0, 0)
	ADDQ $48, AX
	ADDQ $128, BX
	DECQ CX
	JNZ  loop1

store:
	JMP ·gemmStore12x32AVX512(SB)

// func sgemmKernelAVX512Half(k int, a, b, c *float32, ldc int, beta float32, mode int)
//
// sgemmKernelAVX512 for the first six rows of the tile: the A panel is
// still 12 floats per k, and only six rows of C are read or written.
TEXT ·sgemmKernelAVX512Half(SB), NOSPLIT, $0-56
	ARGS
	ZERO12
	TESTQ DX, DX
	JZ    tailh

loop4h:
	STEP6(0, 0)
	STEP6(48, 128)
	STEP6(96, 256)
	STEP6(144, 384)
	ADDQ $192, AX
	ADDQ $512, BX
	DECQ DX
	JNZ  loop4h

tailh:
	ANDQ $3, CX
	JZ   storeh

loop1h:
	STEP6(0, 0)
	ADDQ $48, AX
	ADDQ $128, BX
	DECQ CX
	JNZ  loop1h

storeh:
	JMP ·gemmStore6x32AVX512(SB)

// func gemmStore12x32AVX512(k int, a, b, c *float32, ldc int, beta float32, mode int)
//
// The store of a finished 12×32 tile, entered by a tail jump from a
// micro-kernel with the same arguments: the tile in Z0..Z23 (row r in
// Z(2r), Z(2r+1)), c in DI and ldc in bytes in SI. It writes C as mode
// says (0 C = acc, 1 C += acc, 2 C = acc + beta·C) and returns to the
// micro-kernel's caller.
TEXT ·gemmStore12x32AVX512(SB), NOSPLIT, $0-56
	MOVQ mode+48(FP), DX
	CMPQ DX, $1
	JEQ  add
	CMPQ DX, $2
	JEQ  beta

	STORE(Z0, Z1)
	STORE(Z2, Z3)
	STORE(Z4, Z5)
	STORE(Z6, Z7)
	STORE(Z8, Z9)
	STORE(Z10, Z11)
	STORE(Z12, Z13)
	STORE(Z14, Z15)
	STORE(Z16, Z17)
	STORE(Z18, Z19)
	STORE(Z20, Z21)
	STORE(Z22, Z23)
	VZEROUPPER
	RET

add:
	ADDROW(Z0, Z1)
	ADDROW(Z2, Z3)
	ADDROW(Z4, Z5)
	ADDROW(Z6, Z7)
	ADDROW(Z8, Z9)
	ADDROW(Z10, Z11)
	ADDROW(Z12, Z13)
	ADDROW(Z14, Z15)
	ADDROW(Z16, Z17)
	ADDROW(Z18, Z19)
	ADDROW(Z20, Z21)
	ADDROW(Z22, Z23)
	VZEROUPPER
	RET

beta:
	VBROADCASTSS beta+40(FP), Z24
	BETAROW(Z0, Z1)
	BETAROW(Z2, Z3)
	BETAROW(Z4, Z5)
	BETAROW(Z6, Z7)
	BETAROW(Z8, Z9)
	BETAROW(Z10, Z11)
	BETAROW(Z12, Z13)
	BETAROW(Z14, Z15)
	BETAROW(Z16, Z17)
	BETAROW(Z18, Z19)
	BETAROW(Z20, Z21)
	BETAROW(Z22, Z23)
	VZEROUPPER
	RET

// func gemmStore6x32AVX512(k int, a, b, c *float32, ldc int, beta float32, mode int)
//
// gemmStore12x32AVX512 for the first six rows (Z0..Z11), the store the
// six-row kernels jump to.
TEXT ·gemmStore6x32AVX512(SB), NOSPLIT, $0-56
	MOVQ mode+48(FP), DX
	CMPQ DX, $1
	JEQ  add6
	CMPQ DX, $2
	JEQ  beta6

	STORE(Z0, Z1)
	STORE(Z2, Z3)
	STORE(Z4, Z5)
	STORE(Z6, Z7)
	STORE(Z8, Z9)
	STORE(Z10, Z11)
	VZEROUPPER
	RET

add6:
	ADDROW(Z0, Z1)
	ADDROW(Z2, Z3)
	ADDROW(Z4, Z5)
	ADDROW(Z6, Z7)
	ADDROW(Z8, Z9)
	ADDROW(Z10, Z11)
	VZEROUPPER
	RET

beta6:
	VBROADCASTSS beta+40(FP), Z24
	BETAROW(Z0, Z1)
	BETAROW(Z2, Z3)
	BETAROW(Z4, Z5)
	BETAROW(Z6, Z7)
	BETAROW(Z8, Z9)
	BETAROW(Z10, Z11)
	VZEROUPPER
	RET
