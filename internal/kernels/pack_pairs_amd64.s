//go:build !noasm && amd64

#include "textflag.h"
#include "gemm_avx512_amd64.h"
#include "transpose_amd64.h"

// AVX-512BW packers of bfloat16 pair panels (see pack_pairs.go for the
// layout and the Go twins). Loads and stores are masked, so the edges
// (short panels, odd depth, a short last block) need no scalar code and
// nothing outside the operand is read or outside the panel written.

// pairRowsIdx holds the VPERMT2W word indices that interleave a row of
// low-half values (table 0, indices 0..31) with a row of high-half values
// (table 1, 32..63): the first 16 pairs, then the next 16.
DATA pairRowsIdx<>+0(SB)/8, $0x0021000100200000
DATA pairRowsIdx<>+8(SB)/8, $0x0023000300220002
DATA pairRowsIdx<>+16(SB)/8, $0x0025000500240004
DATA pairRowsIdx<>+24(SB)/8, $0x0027000700260006
DATA pairRowsIdx<>+32(SB)/8, $0x0029000900280008
DATA pairRowsIdx<>+40(SB)/8, $0x002B000B002A000A
DATA pairRowsIdx<>+48(SB)/8, $0x002D000D002C000C
DATA pairRowsIdx<>+56(SB)/8, $0x002F000F002E000E
DATA pairRowsIdx<>+64(SB)/8, $0x0031001100300010
DATA pairRowsIdx<>+72(SB)/8, $0x0033001300320012
DATA pairRowsIdx<>+80(SB)/8, $0x0035001500340014
DATA pairRowsIdx<>+88(SB)/8, $0x0037001700360016
DATA pairRowsIdx<>+96(SB)/8, $0x0039001900380018
DATA pairRowsIdx<>+104(SB)/8, $0x003B001B003A001A
DATA pairRowsIdx<>+112(SB)/8, $0x003D001D003C001C
DATA pairRowsIdx<>+120(SB)/8, $0x003F001F003E001E
GLOBL pairRowsIdx<>(SB), RODATA|NOPTR, $128

// LOWMASK(n, k) sets mask register k to the low n bits (n in CX, 0..63;
// clobbers AX).
#define LOWMASK(k) \
	MOVQ $1, AX; \
	SHLQ CX, AX; \
	DECQ AX; \
	KMOVQ AX, k

// INTERLEAVE stores one panel row: the low values in Z0, the high ones in
// Z1, through the index tables Z30 and Z31, to (DI) under the dword masks
// K2 (pairs 0..15) and K3 (16..31).
#define INTERLEAVE \
	VMOVDQA64 Z0, Z2; \
	VPERMT2W Z1, Z30, Z0; \
	VPERMT2W Z1, Z31, Z2; \
	VMOVDQU32 Z0, K2, (DI); \
	VMOVDQU32 Z2, K3, 64(DI)

// func pairRowsAVX512(d *uint32, h *uint16, ps, kc, n, w int)
//
// One panel of pairs from adjacent lines: row p of the panel (w dwords at
// d + 4·w·p) interleaves the n values at h + 2·ps·(2p) with those at
// h + 2·ps·(2p+1) (zero when 2p+1 = kc), zero past n. The caller
// guarantees kc ≥ 1, 1 ≤ n ≤ w ≤ 32 and that every value and word named
// lies in its slice.
TEXT ·pairRowsAVX512(SB), NOSPLIT, $0-48
	MOVQ d+0(FP), DI
	MOVQ h+8(FP), SI
	MOVQ ps+16(FP), BX
	SHLQ $1, BX // bytes from one depth to the next
	MOVQ kc+24(FP), DX
	MOVQ n+32(FP), CX
	LOWMASK(K1) // the n values of a depth row
	MOVQ w+40(FP), R8
	MOVQ R8, CX
	CMPQ CX, $16
	JLE  2(PC)
	MOVQ $16, CX
	LOWMASK(K2) // panel dwords 0..15
	MOVQ R8, CX
	SUBQ $16, CX
	JGE  2(PC)
	XORQ CX, CX
	LOWMASK(K3) // panel dwords 16..31
	SHLQ $2, R8 // bytes per panel row
	VMOVDQU64 pairRowsIdx<>+0(SB), Z30
	VMOVDQU64 pairRowsIdx<>+64(SB), Z31
	MOVQ DX, R9
	SHRQ $1, R9 // whole pairs
	JZ   odd

loop:
	VMOVDQU16.Z (SI), K1, Z0
	VMOVDQU16.Z (SI)(BX*1), K1, Z1
	INTERLEAVE
	LEAQ (SI)(BX*2), SI
	ADDQ R8, DI
	DECQ R9
	JNZ  loop

odd:
	ANDQ $1, DX
	JZ   done
	VMOVDQU16.Z (SI), K1, Z0
	VPXORD Z1, Z1, Z1
	INTERLEAVE

done:
	VZEROUPPER
	RET

// LOADLINE(z, i) loads line i (at R10, which then steps by R11) into z as
// the masked words K1, or stops loading after line i−1 when there are
// only i lines (R9).
#define LOADLINE(z, i) \
	CMPQ R9, $i; \
	JLE  loaded; \
	VMOVDQU16.Z (R10), K1, z; \
	ADDQ R11, R10

// STOREROW(z, i) stores panel row i from z under K2 at R12 (which then
// steps by R8), or stops after row i−1 when the block has only i (R13).
#define STOREROW(z, i) \
	CMPQ R13, $i; \
	JLE  stored; \
	VMOVDQU32 z, K2, (R12); \
	ADDQ R8, R12

// func pairLinesAVX512(d *uint32, gap int, h *uint16, xs, lines, kc, cols int)
//
// Up to 16 lines of a panel whose depth runs are contiguous: line x's kc
// values at h + 2·xs·x, taken as ⌈kc/2⌉ pair words (the last pair's high
// half zero when kc is odd), become dword x of the panel rows d,
// d + 4·gap, d + 8·gap, … — a transpose of 16×16 dword blocks in
// registers. Dwords lines..cols−1 of each row are zero. The caller
// guarantees 0 ≤ lines ≤ cols ≤ 16, kc ≥ 1 and that everything named lies
// in its slice.
TEXT ·pairLinesAVX512(SB), NOSPLIT, $0-56
	MOVQ d+0(FP), DI
	MOVQ gap+8(FP), R8
	SHLQ $2, R8 // bytes per panel row
	MOVQ h+16(FP), SI
	MOVQ xs+24(FP), R11
	SHLQ $1, R11 // bytes per line
	MOVQ lines+32(FP), R9
	MOVQ kc+40(FP), BX // values left in each line
	MOVQ cols+48(FP), CX
	LOWMASK(K2)
	MOVQ BX, DX
	INCQ DX
	SHRQ $1, DX // pairs left

block:
	MOVQ BX, CX
	CMPQ CX, $32
	JLE  2(PC)
	MOVQ $32, CX
	LOWMASK(K1) // the values of this block: 16 pairs, fewer at the end
	ZERO12
	VPXORD Z12, Z12, Z12
	VPXORD Z13, Z13, Z13
	VPXORD Z14, Z14, Z14
	VPXORD Z15, Z15, Z15
	MOVQ SI, R10
	LOADLINE(Z0, 0)
	LOADLINE(Z1, 1)
	LOADLINE(Z2, 2)
	LOADLINE(Z3, 3)
	LOADLINE(Z4, 4)
	LOADLINE(Z5, 5)
	LOADLINE(Z6, 6)
	LOADLINE(Z7, 7)
	LOADLINE(Z8, 8)
	LOADLINE(Z9, 9)
	LOADLINE(Z10, 10)
	LOADLINE(Z11, 11)
	LOADLINE(Z12, 12)
	LOADLINE(Z13, 13)
	LOADLINE(Z14, 14)
	LOADLINE(Z15, 15)

loaded:
	// Z(x) holds line x's 16 pairs; after the transpose Z(c) holds pair
	// c of all 16 lines.
	TRANSPOSE16X16D

	MOVQ DX, R13
	CMPQ R13, $16
	JLE  2(PC)
	MOVQ $16, R13 // rows of this block
	MOVQ DI, R12
	STOREROW(Z0, 0)
	STOREROW(Z1, 1)
	STOREROW(Z2, 2)
	STOREROW(Z3, 3)
	STOREROW(Z4, 4)
	STOREROW(Z5, 5)
	STOREROW(Z6, 6)
	STOREROW(Z7, 7)
	STOREROW(Z8, 8)
	STOREROW(Z9, 9)
	STOREROW(Z10, 10)
	STOREROW(Z11, 11)
	STOREROW(Z12, 12)
	STOREROW(Z13, 13)
	STOREROW(Z14, 14)
	STOREROW(Z15, 15)

stored:
	MOVQ R12, DI
	ADDQ $64, SI
	SUBQ $32, BX
	SUBQ $16, DX
	JG   block
	VZEROUPPER
	RET

// func pairPanelsAVX512(d *uint32, srcs *pairSrc, pairs, n, gap int)
//
// pairSpan (pack_pairs.go) for each of pairs sources {lo, hi, mlo, mhi,
// slo, shi} (48 bytes each, hi 0: zero high halves; the load of a panel's
// run starts 64·q − slo bytes from lo, its masked-off words not read),
// source i's pair row at dword
// 32·i of every panel, panel by panel: each panel's rows are stored in
// order. The caller guarantees n, pairs ≥ 1 and that everything named
// lies in its slice.
TEXT ·pairPanelsAVX512(SB), NOSPLIT, $0-40
	MOVQ d+0(FP), DI
	MOVQ srcs+8(FP), R8
	MOVQ pairs+16(FP), R9
	MOVQ n+24(FP), DX
	MOVQ gap+32(FP), R10
	SHLQ $2, R10 // bytes from one panel to the next
	VMOVDQU64 pairRowsIdx<>+0(SB), Z30
	VMOVDQU64 pairRowsIdx<>+64(SB), Z31
	XORQ BX, BX // bytes into each run
	XORQ R11, R11 // bytes into each mask

panel:
	MOVQ $32, CX
	CMPQ CX, DX
	JLE  2(PC)
	MOVQ DX, CX // columns in this panel
	LOWMASK(K1)
	KMOVQ AX, K2 // pairs 0..15
	MOVQ AX, R15
	SHRQ $16, AX
	KMOVQ AX, K3 // pairs 16..31
	MOVQ R8, SI
	MOVQ DI, R12
	MOVQ R9, R13

pair:
	MOVQ 16(SI), AX
	MOVL (AX)(R11*1), AX
	ANDQ R15, AX
	KMOVQ AX, K4
	MOVQ (SI), R14
	ADDQ BX, R14
	SUBQ 32(SI), R14
	VMOVDQU16.Z (R14), K4, Z0
	MOVQ 8(SI), R14
	TESTQ R14, R14
	JNZ  hi
	VPXORD Z1, Z1, Z1
	JMP  both

hi:
	MOVQ 24(SI), AX
	MOVL (AX)(R11*1), AX
	ANDQ R15, AX
	KMOVQ AX, K5
	ADDQ BX, R14
	SUBQ 40(SI), R14
	VMOVDQU16.Z (R14), K5, Z1

both:
	VMOVDQA64 Z0, Z2
	VPERMT2W Z1, Z30, Z0
	VPERMT2W Z1, Z31, Z2
	VMOVDQU32 Z0, K2, (R12)
	VMOVDQU32 Z2, K3, 64(R12)
	ADDQ $128, R12
	ADDQ $48, SI
	DECQ R13
	JNZ  pair
	ADDQ R10, DI
	ADDQ $64, BX
	ADDQ $4, R11
	SUBQ $32, DX
	JG   panel
	VZEROUPPER
	RET
