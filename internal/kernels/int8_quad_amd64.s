//go:build amd64 && !noasm

#include "textflag.h"

// The INT8 GEMM's quads layout (int8_quad.go): the AVX512-VNNI
// micro-kernels (12 rows, and 6 for a short last group) and the AVX2
// packer of B.

// DOT adds row r's products for one k-quad: its quad of A at ao(AX)
// (signed), broadcast to every lane by the {1to16} operand, times B's 16
// columns' quads in Z12 (unsigned, b + 128). VPDPBUSD adds the four
// u8·s8 products of each lane to the row's accumulator z, wrapping.
#define DOT(ao, z) VPDPBUSD.BCST ao(AX), Z12, z

// QUAD does one k-quad for all twelve rows, QUAD6 for the first six; B's
// quads are at bo(BX).
#define QUAD6(ao, bo) \
	VMOVDQU32 bo(BX), Z12; \
	DOT(ao+0, Z0); \
	DOT(ao+4, Z1); \
	DOT(ao+8, Z2); \
	DOT(ao+12, Z3); \
	DOT(ao+16, Z4); \
	DOT(ao+20, Z5)

#define QUAD(ao, bo) \
	QUAD6(ao, bo); \
	DOT(ao+24, Z6); \
	DOT(ao+28, Z7); \
	DOT(ao+32, Z8); \
	DOT(ao+36, Z9); \
	DOT(ao+40, Z10); \
	DOT(ao+44, Z11)

// STOREROW subtracts the row's correction at off(R9) from z and stores z
// at DI; ADDROW adds it to what is there instead. Both step DI one row.
#define STOREROW(off, z) \
	VPBROADCASTD off(R9), Z13; \
	VPSUBD       Z13, z, z; \
	VMOVDQU32    z, (DI); \
	ADDQ         SI, DI

#define ADDROW(off, z) \
	VPBROADCASTD off(R9), Z13; \
	VPSUBD       Z13, z, z; \
	VPADDD       (DI), z, z; \
	VMOVDQU32    z, (DI); \
	ADDQ         SI, DI

// ARGS loads the kernels' arguments (see i8KernelQuadsVNNI).
#define ARGS \
	MOVQ    kq+0(FP), CX; \
	MOVQ    a+8(FP), AX; \
	MOVQ    b+16(FP), BX; \
	MOVQ    c+24(FP), DI; \
	MOVQ    ldc+32(FP), SI; \
	SHLQ    $2, SI; \
	MOVQ    corr+40(FP), R9; \
	MOVBLZX accumulate+48(FP), R10; \
	MOVQ    CX, DX; \
	SHRQ    $1, DX

// func i8KernelQuadsVNNI(kq int, a, b *byte, c *int32, ldc int, corr *int32, accumulate bool)
//
// One 12×16 int32 tile over kq ≥ 1 k-quads of packed A (48 bytes per
// quad) and B (64 bytes per quad), minus corr[r] in row r, stored at c
// (row stride ldc elements) or added there.
TEXT ·i8KernelQuadsVNNI(SB), NOSPLIT, $0-49
	ARGS
	VPXORD Z0, Z0, Z0
	VPXORD Z1, Z1, Z1
	VPXORD Z2, Z2, Z2
	VPXORD Z3, Z3, Z3
	VPXORD Z4, Z4, Z4
	VPXORD Z5, Z5, Z5
	VPXORD Z6, Z6, Z6
	VPXORD Z7, Z7, Z7
	VPXORD Z8, Z8, Z8
	VPXORD Z9, Z9, Z9
	VPXORD Z10, Z10, Z10
	VPXORD Z11, Z11, Z11
	TESTQ DX, DX
	JZ    odd12

loop12:
	QUAD(0, 0)
	QUAD(48, 64)
	ADDQ $96, AX
	ADDQ $128, BX
	DECQ DX
	JNZ  loop12

odd12:
	TESTQ $1, CX
	JZ    fix12
	QUAD(0, 0)

fix12:
	TESTQ R10, R10
	JNZ   add12
	STOREROW(0, Z0)
	STOREROW(4, Z1)
	STOREROW(8, Z2)
	STOREROW(12, Z3)
	STOREROW(16, Z4)
	STOREROW(20, Z5)
	STOREROW(24, Z6)
	STOREROW(28, Z7)
	STOREROW(32, Z8)
	STOREROW(36, Z9)
	STOREROW(40, Z10)
	STOREROW(44, Z11)
	VZEROUPPER
	RET

add12:
	ADDROW(0, Z0)
	ADDROW(4, Z1)
	ADDROW(8, Z2)
	ADDROW(12, Z3)
	ADDROW(16, Z4)
	ADDROW(20, Z5)
	ADDROW(24, Z6)
	ADDROW(28, Z7)
	ADDROW(32, Z8)
	ADDROW(36, Z9)
	ADDROW(40, Z10)
	ADDROW(44, Z11)
	VZEROUPPER
	RET

// func i8KernelQuads6VNNI(kq int, a, b *byte, c *int32, ldc int, corr *int32, accumulate bool)
//
// i8KernelQuadsVNNI for the first six rows of the 12-row group (the A
// layout is unchanged, 48 bytes per quad): the edge of a matrix whose rows
// leave at most six in the last group.
TEXT ·i8KernelQuads6VNNI(SB), NOSPLIT, $0-49
	ARGS
	VPXORD Z0, Z0, Z0
	VPXORD Z1, Z1, Z1
	VPXORD Z2, Z2, Z2
	VPXORD Z3, Z3, Z3
	VPXORD Z4, Z4, Z4
	VPXORD Z5, Z5, Z5
	TESTQ DX, DX
	JZ    odd6

loop6:
	QUAD6(0, 0)
	QUAD6(48, 64)
	ADDQ $96, AX
	ADDQ $128, BX
	DECQ DX
	JNZ  loop6

odd6:
	TESTQ $1, CX
	JZ    fix6
	QUAD6(0, 0)

fix6:
	TESTQ R10, R10
	JNZ   add6
	STOREROW(0, Z0)
	STOREROW(4, Z1)
	STOREROW(8, Z2)
	STOREROW(12, Z3)
	STOREROW(16, Z4)
	STOREROW(20, Z5)
	VZEROUPPER
	RET

add6:
	ADDROW(0, Z0)
	ADDROW(4, Z1)
	ADDROW(8, Z2)
	ADDROW(12, Z3)
	ADDROW(16, Z4)
	ADDROW(20, Z5)
	VZEROUPPER
	RET
// func i8PackBQuads(dst *byte, r0, r1, r2, r3 *int8, groups, stride int)
//
// Interleaves rows r0..r3 of B (one k-quad) for groups panels of 16
// columns, adding 128: column j's four bytes, 64 bytes per panel, panels
// stride bytes apart in dst.
TEXT ·i8PackBQuads(SB), NOSPLIT, $0-56
	MOVQ         dst+0(FP), DI
	MOVQ         r0+8(FP), SI
	MOVQ         r1+16(FP), DX
	MOVQ         r2+24(FP), R8
	MOVQ         r3+32(FP), R9
	MOVQ         groups+40(FP), CX
	MOVQ         stride+48(FP), R10
	MOVL         $0x80808080, AX
	MOVL         AX, X15
	VPBROADCASTD X15, X15

packq_loop:
	VPXOR      (SI), X15, X0
	VPXOR      (DX), X15, X1
	VPXOR      (R8), X15, X2
	VPXOR      (R9), X15, X3
	VPUNPCKLBW X1, X0, X4  // (r0, r1) of columns 0..7
	VPUNPCKHBW X1, X0, X5  // columns 8..15
	VPUNPCKLBW X3, X2, X6  // (r2, r3) of columns 0..7
	VPUNPCKHBW X3, X2, X7
	VPUNPCKLWD X6, X4, X8  // (r0, r1, r2, r3) of columns 0..3
	VPUNPCKHWD X6, X4, X9  // columns 4..7
	VPUNPCKLWD X7, X5, X10 // columns 8..11
	VPUNPCKHWD X7, X5, X11 // columns 12..15
	VMOVDQU    X8, (DI)
	VMOVDQU    X9, 16(DI)
	VMOVDQU    X10, 32(DI)
	VMOVDQU    X11, 48(DI)
	ADDQ       $16, SI
	ADDQ       $16, DX
	ADDQ       $16, R8
	ADDQ       $16, R9
	ADDQ       R10, DI
	DECQ       CX
	JNZ        packq_loop
	RET
