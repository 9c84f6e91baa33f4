//go:build amd64 && !noasm

#include "textflag.h"

// The INT8 GEMM's quads layout (int8_quad.go): the AVX512-VNNI
// micro-kernel and the AVX2 packer of B.

// QUAD does one k-quad: B's 16 columns' quads at bo(BX) in Z12 (unsigned,
// b + 128), and for each of the twelve rows its quad of A at ao+4r(AX),
// broadcast to every lane by the {1to16} operand (signed). VPDPBUSD adds
// the four u8·s8 products of each lane to the row's accumulator, wrapping.
#define QUAD(ao, bo) \
	VMOVDQU32 bo(BX), Z12; \
	VPDPBUSD.BCST ao+0(AX), Z12, Z0; \
	VPDPBUSD.BCST ao+4(AX), Z12, Z1; \
	VPDPBUSD.BCST ao+8(AX), Z12, Z2; \
	VPDPBUSD.BCST ao+12(AX), Z12, Z3; \
	VPDPBUSD.BCST ao+16(AX), Z12, Z4; \
	VPDPBUSD.BCST ao+20(AX), Z12, Z5; \
	VPDPBUSD.BCST ao+24(AX), Z12, Z6; \
	VPDPBUSD.BCST ao+28(AX), Z12, Z7; \
	VPDPBUSD.BCST ao+32(AX), Z12, Z8; \
	VPDPBUSD.BCST ao+36(AX), Z12, Z9; \
	VPDPBUSD.BCST ao+40(AX), Z12, Z10; \
	VPDPBUSD.BCST ao+44(AX), Z12, Z11

// func i8KernelQuadsVNNI(kq int, a, b *byte, c *int32, ldc int, corr *int32, accumulate bool)
//
// One 12×16 int32 tile over kq ≥ 1 k-quads of packed A (48 bytes per
// quad) and B (64 bytes per quad), minus corr[r] in row r, stored at c
// (row stride ldc elements) or added there.
TEXT ·i8KernelQuadsVNNI(SB), NOSPLIT, $0-49
	MOVQ    kq+0(FP), CX
	MOVQ    a+8(FP), AX
	MOVQ    b+16(FP), BX
	MOVQ    c+24(FP), DI
	MOVQ    ldc+32(FP), SI
	SHLQ    $2, SI
	MOVQ    corr+40(FP), R9
	MOVBLZX accumulate+48(FP), R10

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

	MOVQ CX, DX
	SHRQ $1, DX
	JZ   odd

loop2:
	QUAD(0, 0)
	QUAD(48, 64)
	ADDQ $96, AX
	ADDQ $128, BX
	DECQ DX
	JNZ  loop2

odd:
	TESTQ $1, CX
	JZ    fix
	QUAD(0, 0)

fix:
	VPBROADCASTD 0(R9), Z13
	VPSUBD       Z13, Z0, Z0
	VPBROADCASTD 4(R9), Z13
	VPSUBD       Z13, Z1, Z1
	VPBROADCASTD 8(R9), Z13
	VPSUBD       Z13, Z2, Z2
	VPBROADCASTD 12(R9), Z13
	VPSUBD       Z13, Z3, Z3
	VPBROADCASTD 16(R9), Z13
	VPSUBD       Z13, Z4, Z4
	VPBROADCASTD 20(R9), Z13
	VPSUBD       Z13, Z5, Z5
	VPBROADCASTD 24(R9), Z13
	VPSUBD       Z13, Z6, Z6
	VPBROADCASTD 28(R9), Z13
	VPSUBD       Z13, Z7, Z7
	VPBROADCASTD 32(R9), Z13
	VPSUBD       Z13, Z8, Z8
	VPBROADCASTD 36(R9), Z13
	VPSUBD       Z13, Z9, Z9
	VPBROADCASTD 40(R9), Z13
	VPSUBD       Z13, Z10, Z10
	VPBROADCASTD 44(R9), Z13
	VPSUBD       Z13, Z11, Z11
	TESTQ R10, R10
	JNZ   add
	VMOVDQU32 Z0, (DI)
	ADDQ      SI, DI
	VMOVDQU32 Z1, (DI)
	ADDQ      SI, DI
	VMOVDQU32 Z2, (DI)
	ADDQ      SI, DI
	VMOVDQU32 Z3, (DI)
	ADDQ      SI, DI
	VMOVDQU32 Z4, (DI)
	ADDQ      SI, DI
	VMOVDQU32 Z5, (DI)
	ADDQ      SI, DI
	VMOVDQU32 Z6, (DI)
	ADDQ      SI, DI
	VMOVDQU32 Z7, (DI)
	ADDQ      SI, DI
	VMOVDQU32 Z8, (DI)
	ADDQ      SI, DI
	VMOVDQU32 Z9, (DI)
	ADDQ      SI, DI
	VMOVDQU32 Z10, (DI)
	ADDQ      SI, DI
	VMOVDQU32 Z11, (DI)
	VZEROUPPER
	RET

add:
	VPADDD    (DI), Z0, Z0
	VMOVDQU32 Z0, (DI)
	ADDQ      SI, DI
	VPADDD    (DI), Z1, Z1
	VMOVDQU32 Z1, (DI)
	ADDQ      SI, DI
	VPADDD    (DI), Z2, Z2
	VMOVDQU32 Z2, (DI)
	ADDQ      SI, DI
	VPADDD    (DI), Z3, Z3
	VMOVDQU32 Z3, (DI)
	ADDQ      SI, DI
	VPADDD    (DI), Z4, Z4
	VMOVDQU32 Z4, (DI)
	ADDQ      SI, DI
	VPADDD    (DI), Z5, Z5
	VMOVDQU32 Z5, (DI)
	ADDQ      SI, DI
	VPADDD    (DI), Z6, Z6
	VMOVDQU32 Z6, (DI)
	ADDQ      SI, DI
	VPADDD    (DI), Z7, Z7
	VMOVDQU32 Z7, (DI)
	ADDQ      SI, DI
	VPADDD    (DI), Z8, Z8
	VMOVDQU32 Z8, (DI)
	ADDQ      SI, DI
	VPADDD    (DI), Z9, Z9
	VMOVDQU32 Z9, (DI)
	ADDQ      SI, DI
	VPADDD    (DI), Z10, Z10
	VMOVDQU32 Z10, (DI)
	ADDQ      SI, DI
	VPADDD    (DI), Z11, Z11
	VMOVDQU32 Z11, (DI)
	VZEROUPPER
	RET

// QUAD6 is QUAD for the first six rows of the group only.
#define QUAD6(ao, bo) \
	VMOVDQU32 bo(BX), Z12; \
	VPDPBUSD.BCST ao+0(AX), Z12, Z0; \
	VPDPBUSD.BCST ao+4(AX), Z12, Z1; \
	VPDPBUSD.BCST ao+8(AX), Z12, Z2; \
	VPDPBUSD.BCST ao+12(AX), Z12, Z3; \
	VPDPBUSD.BCST ao+16(AX), Z12, Z4; \
	VPDPBUSD.BCST ao+20(AX), Z12, Z5

// func i8KernelQuads6VNNI(kq int, a, b *byte, c *int32, ldc int, corr *int32, accumulate bool)
//
// i8KernelQuadsVNNI for the first six rows of the 12-row group (the A
// layout is unchanged, 48 bytes per quad): the edge of a matrix whose rows
// leave at most six in the last group.
TEXT ·i8KernelQuads6VNNI(SB), NOSPLIT, $0-49
	MOVQ    kq+0(FP), CX
	MOVQ    a+8(FP), AX
	MOVQ    b+16(FP), BX
	MOVQ    c+24(FP), DI
	MOVQ    ldc+32(FP), SI
	SHLQ    $2, SI
	MOVQ    corr+40(FP), R9
	MOVBLZX accumulate+48(FP), R10

	VPXORD Z0, Z0, Z0
	VPXORD Z1, Z1, Z1
	VPXORD Z2, Z2, Z2
	VPXORD Z3, Z3, Z3
	VPXORD Z4, Z4, Z4
	VPXORD Z5, Z5, Z5

	MOVQ CX, DX
	SHRQ $1, DX
	JZ   odd6

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
	VPBROADCASTD 0(R9), Z13
	VPSUBD       Z13, Z0, Z0
	VPBROADCASTD 4(R9), Z13
	VPSUBD       Z13, Z1, Z1
	VPBROADCASTD 8(R9), Z13
	VPSUBD       Z13, Z2, Z2
	VPBROADCASTD 12(R9), Z13
	VPSUBD       Z13, Z3, Z3
	VPBROADCASTD 16(R9), Z13
	VPSUBD       Z13, Z4, Z4
	VPBROADCASTD 20(R9), Z13
	VPSUBD       Z13, Z5, Z5
	TESTQ R10, R10
	JNZ   add6
	VMOVDQU32 Z0, (DI)
	ADDQ      SI, DI
	VMOVDQU32 Z1, (DI)
	ADDQ      SI, DI
	VMOVDQU32 Z2, (DI)
	ADDQ      SI, DI
	VMOVDQU32 Z3, (DI)
	ADDQ      SI, DI
	VMOVDQU32 Z4, (DI)
	ADDQ      SI, DI
	VMOVDQU32 Z5, (DI)
	VZEROUPPER
	RET

add6:
	VPADDD    (DI), Z0, Z0
	VMOVDQU32 Z0, (DI)
	ADDQ      SI, DI
	VPADDD    (DI), Z1, Z1
	VMOVDQU32 Z1, (DI)
	ADDQ      SI, DI
	VPADDD    (DI), Z2, Z2
	VMOVDQU32 Z2, (DI)
	ADDQ      SI, DI
	VPADDD    (DI), Z3, Z3
	VMOVDQU32 Z3, (DI)
	ADDQ      SI, DI
	VPADDD    (DI), Z4, Z4
	VMOVDQU32 Z4, (DI)
	ADDQ      SI, DI
	VPADDD    (DI), Z5, Z5
	VMOVDQU32 Z5, (DI)
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
