//go:build amd64 && !noasm

#include "textflag.h"

// ROW_ARGS loads the arguments common to the routines below: DI dst, SI
// src, R8 rows, R9 n, R10 and R11 the steps in bytes (elements << es),
// R12 blocks, and R13 = n − blocks << bs, the scalar elements per row.
#define ROW_ARGS(es, bs) \
	MOVQ dst+0(FP), DI \
	MOVQ src+8(FP), SI \
	MOVQ rows+16(FP), R8 \
	MOVQ n+24(FP), R9 \
	MOVQ dstStep+32(FP), R10 \
	MOVQ srcStep+40(FP), R11 \
	MOVQ blocks+48(FP), R12 \
	SHLQ $es, R10 \
	SHLQ $es, R11 \
	MOVQ R9, R13 \
	MOVQ R12, AX \
	SHLQ $bs, AX \
	SUBQ AX, R13

// Stride-2 row loops of conv_col.go: rows rows of n float32 each, row r of
// dst at dst + r·dstStep and of src at src + r·srcStep (steps in
// elements). The first 8·blocks elements of a row go 8 at a time, the
// rest one at a time.

// func convGather2RowsF32(dst, src *float32, rows, n, dstStep, srcStep, blocks int):
// dst[i] = src[2i] for i < n in each row. A block reads src[2i : 2i+16].
TEXT ·convGather2RowsF32(SB), NOSPLIT, $0-56
	ROW_ARGS(2, 3)

g_row:
	MOVQ DI, BX
	MOVQ SI, DX
	MOVQ R12, CX
	TESTQ CX, CX
	JZ   g_tail

g_block:
	VMOVUPS (DX), Y0                // s0 … s7
	VMOVUPS 32(DX), Y1              // s8 … s15
	VSHUFPS $0x88, Y1, Y0, Y2       // s0 s2 s8 s10 | s4 s6 s12 s14
	VPERMPD $0xd8, Y2, Y2           // s0 s2 s4 s6 s8 s10 s12 s14
	VMOVUPS Y2, (BX)
	ADDQ    $64, DX
	ADDQ    $32, BX
	DECQ    CX
	JNZ     g_block

g_tail:
	MOVQ R13, CX
	TESTQ CX, CX
	JZ   g_next

g_one:
	MOVL (DX), AX
	MOVL AX, (BX)
	ADDQ $8, DX
	ADDQ $4, BX
	DECQ CX
	JNZ  g_one

g_next:
	ADDQ R10, DI
	ADDQ R11, SI
	DECQ R8
	JNZ  g_row
	VZEROUPPER
	RET

// func convScatter2AddRowsF32(dst, src *float32, rows, n, dstStep, srcStep, blocks int):
// dst[2i] += src[i] for i < n in each row. A block reads and writes
// dst[2i : 2i+16], adding +0 to the odd elements, which leaves every value
// but −0 unchanged (−0 becomes +0).
TEXT ·convScatter2AddRowsF32(SB), NOSPLIT, $0-56
	ROW_ARGS(2, 3)
	VXORPS Y15, Y15, Y15

s_row:
	MOVQ DI, BX
	MOVQ SI, DX
	MOVQ R12, CX
	TESTQ CX, CX
	JZ   s_tail

s_block:
	VMOVUPS    (DX), Y0             // a0 … a7
	VUNPCKLPS  Y15, Y0, Y1          // a0 0 a1 0 | a4 0 a5 0
	VUNPCKHPS  Y15, Y0, Y2          // a2 0 a3 0 | a6 0 a7 0
	VPERM2F128 $0x20, Y2, Y1, Y3    // a0 0 a1 0 a2 0 a3 0
	VPERM2F128 $0x31, Y2, Y1, Y4    // a4 0 a5 0 a6 0 a7 0
	VADDPS     (BX), Y3, Y3
	VADDPS     32(BX), Y4, Y4
	VMOVUPS    Y3, (BX)
	VMOVUPS    Y4, 32(BX)
	ADDQ       $32, DX
	ADDQ       $64, BX
	DECQ       CX
	JNZ        s_block

s_tail:
	MOVQ R13, CX
	TESTQ CX, CX
	JZ   s_next

s_one:
	VMOVSS (BX), X0
	VADDSS (DX), X0, X0
	VMOVSS X0, (BX)
	ADDQ  $4, DX
	ADDQ  $8, BX
	DECQ  CX
	JNZ   s_one

s_next:
	ADDQ R10, DI
	ADDQ R11, SI
	DECQ R8
	JNZ  s_row
	VZEROUPPER
	RET

// func convGather2RowsU16(dst, src *uint16, rows, n, dstStep, srcStep, blocks int):
// dst[i] = src[2i] for i < n in each row, on 16-bit values. A block reads
// src[2i : 2i+32] and writes 16 values: each 32-bit pair's low half is
// kept (VPAND), the pairs are packed to 16 bits (VPACKUSDW, exact since
// they are below 2¹⁶) and VPERMQ undoes the per-lane interleave.
TEXT ·convGather2RowsU16(SB), NOSPLIT, $0-56
	ROW_ARGS(1, 4)
	VPCMPEQD Y15, Y15, Y15
	VPSRLD   $16, Y15, Y15          // 0x0000ffff in every dword

h_row:
	MOVQ  DI, BX
	MOVQ  SI, DX
	MOVQ  R12, CX
	TESTQ CX, CX
	JZ    h_tail

h_block:
	VPAND     (DX), Y15, Y0         // s0 s2 … s14 in the dwords' low halves
	VPAND     32(DX), Y15, Y1       // s16 … s30
	VPACKUSDW Y1, Y0, Y2            // s0–s6 s16–s22 | s8–s14 s24–s30
	VPERMQ    $0xd8, Y2, Y2         // s0 s2 … s30
	VMOVDQU   Y2, (BX)
	ADDQ      $64, DX
	ADDQ      $32, BX
	DECQ      CX
	JNZ       h_block

h_tail:
	MOVQ  R13, CX
	TESTQ CX, CX
	JZ    h_next

h_one:
	MOVWLZX (DX), AX
	MOVW    AX, (BX)
	ADDQ    $4, DX
	ADDQ    $2, BX
	DECQ    CX
	JNZ     h_one

h_next:
	ADDQ R10, DI
	ADDQ R11, SI
	DECQ R8
	JNZ  h_row
	VZEROUPPER
	RET
