//go:build !noasm && amd64

#include "textflag.h"
#include "gemm_half_out_amd64.h"

// The AMX bfloat16 GEMM micro-kernel: one 32×32 float32 tile of C from
// bfloat16 pair panels with TDPBF16PS (the layouts are in gemm_amx.go).
// Eight tile registers, each configured as 16 rows of 64 bytes:
//
//	TMM0 C rows 0–15, columns 0–15     TMM4 A rows 0–15 (16 pairs each)
//	TMM1 C rows 0–15, columns 16–31    TMM5 A rows 16–31
//	TMM2 C rows 16–31, columns 0–15    TMM6 B 16 pair rows, columns 0–15
//	TMM3 C rows 16–31, columns 16–31   TMM7 B 16 pair rows, columns 16–31
//
// A 16-pair step (32 depth values) loads two A tiles (from a packed
// panel 2 KiB, contiguous, stride 64; or 16 rows of 32 bfloat16 values
// each read in place, stride the rows' distance) and two B tiles (16 pair
// rows of the B panel, stride 128) and runs four TDPBF16PS:
// C(i,j) += A(i)·B(j).
//
// All tile use stays inside this one call: the configuration is loaded,
// the tiles are used, and TILERELEASE ends it before the return. Go never
// preempts assembly asynchronously and saves no tile state when it
// switches goroutines, so tile registers must never hold a value across a
// return to Go.
//
// Go's assembler has no AMX mnemonics: each instruction is its encoding,
// taken from GNU as 2.40 (objdump -d) for these exact registers. The
// operands of the fixed-register forms are in the comments (AT&T order).

// ldtilecfg (%rdx)
#define LDTILECFG_DX BYTE $0xc4; BYTE $0xe2; BYTE $0x78; BYTE $0x49; BYTE $0x02

// tilerelease
#define TILERELEASE BYTE $0xc4; BYTE $0xe2; BYTE $0x78; BYTE $0x49; BYTE $0xc0

// tilezero %tmm(t), t < 8
#define TILEZERO(t) BYTE $0xc4; BYTE $0xe2; BYTE $0x7b; BYTE $0x49; BYTE $(0xc0 | (t)<<3)

// The C tiles at (%rdi,%rsi,1), 64(%rdi,%rsi,1), (%r8,%rsi,1) and
// 64(%r8,%rsi,1): tileloadd into TMM0–TMM3, tilestored from them.
#define LOADC \
	BYTE $0xc4; BYTE $0xe2; BYTE $0x7b; BYTE $0x4b; BYTE $0x04; BYTE $0x37; \
	BYTE $0xc4; BYTE $0xe2; BYTE $0x7b; BYTE $0x4b; BYTE $0x4c; BYTE $0x37; BYTE $0x40; \
	BYTE $0xc4; BYTE $0xc2; BYTE $0x7b; BYTE $0x4b; BYTE $0x14; BYTE $0x30; \
	BYTE $0xc4; BYTE $0xc2; BYTE $0x7b; BYTE $0x4b; BYTE $0x5c; BYTE $0x30; BYTE $0x40

#define STOREC \
	BYTE $0xc4; BYTE $0xe2; BYTE $0x7a; BYTE $0x4b; BYTE $0x04; BYTE $0x37; \
	BYTE $0xc4; BYTE $0xe2; BYTE $0x7a; BYTE $0x4b; BYTE $0x4c; BYTE $0x37; BYTE $0x40; \
	BYTE $0xc4; BYTE $0xc2; BYTE $0x7a; BYTE $0x4b; BYTE $0x14; BYTE $0x30; \
	BYTE $0xc4; BYTE $0xc2; BYTE $0x7a; BYTE $0x4b; BYTE $0x5c; BYTE $0x30; BYTE $0x40

// tilestored TMM0–TMM3 to the 32×32 float32 scratch at R11, rows 128
// bytes apart (R10): (%r11,%r10,1), 64(…), 2048(…), 2112(…).
#define STORETMP \
	BYTE $0xc4; BYTE $0x82; BYTE $0x7a; BYTE $0x4b; BYTE $0x04; BYTE $0x13; \
	BYTE $0xc4; BYTE $0x82; BYTE $0x7a; BYTE $0x4b; BYTE $0x4c; BYTE $0x13; BYTE $0x40; \
	BYTE $0xc4; BYTE $0x82; BYTE $0x7a; BYTE $0x4b; BYTE $0x94; BYTE $0x13; LONG $0x00000800; \
	BYTE $0xc4; BYTE $0x82; BYTE $0x7a; BYTE $0x4b; BYTE $0x9c; BYTE $0x13; LONG $0x00000840

// One 16-pair step: tileloadd (%rax,%r9,1) → TMM4, (%rdx,%r9,1) →
// TMM5 (A rows 16–31, rdx = rax + 16·r9), (%rbx,%r10,1) → TMM6,
// 64(%rbx,%r10,1) → TMM7; then tdpbf16ps TMM6,TMM4,TMM0; TMM7,TMM4,TMM1;
// TMM6,TMM5,TMM2; TMM7,TMM5,TMM3.
#define STEP \
	BYTE $0xc4; BYTE $0xa2; BYTE $0x7b; BYTE $0x4b; BYTE $0x24; BYTE $0x08; \
	BYTE $0xc4; BYTE $0xa2; BYTE $0x7b; BYTE $0x4b; BYTE $0x2c; BYTE $0x0a; \
	BYTE $0xc4; BYTE $0xa2; BYTE $0x7b; BYTE $0x4b; BYTE $0x34; BYTE $0x13; \
	BYTE $0xc4; BYTE $0xa2; BYTE $0x7b; BYTE $0x4b; BYTE $0x7c; BYTE $0x13; BYTE $0x40; \
	BYTE $0xc4; BYTE $0xe2; BYTE $0x4a; BYTE $0x5c; BYTE $0xc4; \
	BYTE $0xc4; BYTE $0xe2; BYTE $0x42; BYTE $0x5c; BYTE $0xcc; \
	BYTE $0xc4; BYTE $0xe2; BYTE $0x4a; BYTE $0x5c; BYTE $0xd5; \
	BYTE $0xc4; BYTE $0xe2; BYTE $0x42; BYTE $0x5c; BYTE $0xdd

// The tile configuration: palette 1, every tile 16 rows of 64 bytes.
DATA amxcfg<>+0(SB)/8, $1
DATA amxcfg<>+16(SB)/8, $0x0040004000400040
DATA amxcfg<>+24(SB)/8, $0x0040004000400040
DATA amxcfg<>+48(SB)/8, $0x1010101010101010
GLOBL amxcfg<>(SB), RODATA|NOPTR, $64

// func amxTilesBF16(n, kb int, a unsafe.Pointer, astride, astep, atile int, b unsafe.Pointer, btile int, c unsafe.Pointer, ldc, ctile int, bias *float32, biastile int, tmp *float32, beta float32, mode int, out *uint16, ldo, otile int)
//
// n ≥ 1 whole 32×32 tiles of C, one tile configuration (LDTILECFG,
// TILERELEASE) for them all: tile i at c + i·ctile bytes (rows ldc
// elements apart), from the A panel at a + i·atile and the B panel at
// b + i·btile (a column of tiles: atile a panel's, btile 0, ctile 32
// rows; a row of tiles: atile 0, btile a panel's, ctile 128). kb ≥ 1
// 16-pair steps. A row r of step s is the 64 bytes at a + s·astep +
// r·astride (a packed panel: 2048 and 64; rows of bfloat16 read in
// place: 64 and their distance in bytes). Mode 0: C = A·B; mode 1: C's
// tile is loaded into the accumulators and A·B added to it; mode 2: A·B
// goes to tmp (32×32 float32, rows 32 apart) and C = A·B + beta·C with
// one rounding (VFMADD231PS); mode 3: the sums start from the row of 32
// float32 at bias + i·biastile in every row (a stride-0 load), as mode 1
// from a C holding it in every row. With out not nil each finished tile
// is also narrowed to bfloat16 at out + i·otile bytes (rows ldo elements
// apart, NARROWROW32), from C, or, when c is nil (modes 0 and 3 only),
// from tmp, and C is not written. The caller guarantees the kb steps of
// 32 A rows and 512·kb dwords of B of every tile and whole tiles at c
// and out.
TEXT ·amxTilesBF16(SB), NOSPLIT, $0-152
	LEAQ amxcfg<>(SB), DX
	LDTILECFG_DX
	NARROWCONSTS
	MOVQ astride+24(FP), R9
	MOVQ astep+32(FP), R13
	MOVQ $128, R10
	MOVQ tmp+104(FP), R11
	MOVQ mode+120(FP), R12

tile:
	MOVQ a+16(FP), AX
	MOVQ R9, DX
	SHLQ $4, DX
	ADDQ AX, DX
	MOVQ b+48(FP), BX
	MOVQ kb+8(FP), CX
	CMPQ R12, $1
	JEQ  loadc
	CMPQ R12, $3
	JNE  zero
	// Mode 3: every row of the accumulators from the bias row (stride 0).
	MOVQ bias+88(FP), DI
	XORQ SI, SI
	MOVQ DI, R8
	LOADC
	JMP  loop

loadc:
	MOVQ c+64(FP), DI
	MOVQ ldc+72(FP), SI
	SHLQ $2, SI
	MOVQ SI, R8
	SHLQ $4, R8
	ADDQ DI, R8
	LOADC
	JMP  loop

zero:
	TILEZERO(0)
	TILEZERO(1)
	TILEZERO(2)
	TILEZERO(3)

loop:
	STEP
	ADDQ R13, AX
	ADDQ R13, DX
	ADDQ $2048, BX
	DECQ CX
	JNZ  loop
	MOVQ c+64(FP), DI
	MOVQ ldc+72(FP), SI
	SHLQ $2, SI
	MOVQ SI, R8
	SHLQ $4, R8
	ADDQ DI, R8
	CMPQ R12, $2
	JEQ  beta
	TESTQ DI, DI
	JEQ  totmp
	STOREC
	JMP  narrow

totmp:
	// Only out is written: the tile from tmp, rows 128 bytes apart.
	STORETMP
	MOVQ R11, DI
	MOVQ $128, SI
	JMP  narrow

beta:
	STORETMP
	MOVQ         R11, AX
	VBROADCASTSS beta+112(FP), Z13
	MOVQ         $32, CX

betarow:
	VMOVUPS     (AX), Z0
	VMOVUPS     64(AX), Z1
	VFMADD231PS (DI), Z13, Z0
	VFMADD231PS 64(DI), Z13, Z1
	VMOVUPS     Z0, (DI)
	VMOVUPS     Z1, 64(DI)
	ADDQ        $128, AX
	ADDQ        SI, DI
	DECQ        CX
	JNZ         betarow
	MOVQ        c+64(FP), DI

narrow:
	// The finished tile is at DI, rows SI bytes apart: narrow it to out.
	MOVQ  out+128(FP), BX
	TESTQ BX, BX
	JEQ   next
	MOVQ  ldo+136(FP), DX
	SHLQ  $1, DX
	MOVQ  $32, CX

narrowrow:
	NARROWROW32(DI, BX)
	ADDQ SI, DI
	ADDQ DX, BX
	DECQ CX
	JNZ  narrowrow
	MOVQ otile+144(FP), DX
	ADDQ DX, out+128(FP)

next:
	MOVQ atile+40(FP), AX
	ADDQ AX, a+16(FP)
	MOVQ btile+56(FP), AX
	ADDQ AX, b+48(FP)
	MOVQ biastile+96(FP), AX
	ADDQ AX, bias+88(FP)

	MOVQ c+64(FP), DI
	TESTQ DI, DI
	JEQ  count
	MOVQ ctile+80(FP), AX
	ADDQ AX, c+64(FP)

count:
	DECQ n+0(FP)
	JNZ  tile
	TILERELEASE
	VZEROUPPER
	RET

// func amxStepColsAVX512(blk *uint32, h *uint16, ld int)
//
// One whole step of an AMX A panel from op(A) = Aᵀ (amxStepCols is its
// twin): for each pair t, depths 2t and 2t+1 of rows 0–31 are two runs of
// 32 values ld apart at h, widened and combined into pair words: for rows
// 0–15, then 16–31, sixteen registers (pair t: one per register, row r:
// dword r) are transposed in registers — dword pairs, quadword pairs,
// then 128-bit lanes (VSHUFI32X4) — so that row r's 16 pairs are one
// 64-byte store at blk + 64r (16 scatters per half before: 0.5 s of a
// 10 s GPT profile).
TEXT ·amxStepColsAVX512(SB), NOSPLIT, $0-24
	MOVQ blk+0(FP), DI
	MOVQ h+8(FP), SI
	MOVQ ld+16(FP), DX
	SHLQ $1, DX // bytes between depths
	MOVQ SI, R8
	VPMOVZXWD 0(R8), Z0
	VPMOVZXWD 0(R8)(DX*1), Z16
	VPSLLD $16, Z16, Z16
	VPORD Z16, Z0, Z0
	LEAQ (R8)(DX*2), R8
	VPMOVZXWD 0(R8), Z1
	VPMOVZXWD 0(R8)(DX*1), Z16
	VPSLLD $16, Z16, Z16
	VPORD Z16, Z1, Z1
	LEAQ (R8)(DX*2), R8
	VPMOVZXWD 0(R8), Z2
	VPMOVZXWD 0(R8)(DX*1), Z16
	VPSLLD $16, Z16, Z16
	VPORD Z16, Z2, Z2
	LEAQ (R8)(DX*2), R8
	VPMOVZXWD 0(R8), Z3
	VPMOVZXWD 0(R8)(DX*1), Z16
	VPSLLD $16, Z16, Z16
	VPORD Z16, Z3, Z3
	LEAQ (R8)(DX*2), R8
	VPMOVZXWD 0(R8), Z4
	VPMOVZXWD 0(R8)(DX*1), Z16
	VPSLLD $16, Z16, Z16
	VPORD Z16, Z4, Z4
	LEAQ (R8)(DX*2), R8
	VPMOVZXWD 0(R8), Z5
	VPMOVZXWD 0(R8)(DX*1), Z16
	VPSLLD $16, Z16, Z16
	VPORD Z16, Z5, Z5
	LEAQ (R8)(DX*2), R8
	VPMOVZXWD 0(R8), Z6
	VPMOVZXWD 0(R8)(DX*1), Z16
	VPSLLD $16, Z16, Z16
	VPORD Z16, Z6, Z6
	LEAQ (R8)(DX*2), R8
	VPMOVZXWD 0(R8), Z7
	VPMOVZXWD 0(R8)(DX*1), Z16
	VPSLLD $16, Z16, Z16
	VPORD Z16, Z7, Z7
	LEAQ (R8)(DX*2), R8
	VPMOVZXWD 0(R8), Z8
	VPMOVZXWD 0(R8)(DX*1), Z16
	VPSLLD $16, Z16, Z16
	VPORD Z16, Z8, Z8
	LEAQ (R8)(DX*2), R8
	VPMOVZXWD 0(R8), Z9
	VPMOVZXWD 0(R8)(DX*1), Z16
	VPSLLD $16, Z16, Z16
	VPORD Z16, Z9, Z9
	LEAQ (R8)(DX*2), R8
	VPMOVZXWD 0(R8), Z10
	VPMOVZXWD 0(R8)(DX*1), Z16
	VPSLLD $16, Z16, Z16
	VPORD Z16, Z10, Z10
	LEAQ (R8)(DX*2), R8
	VPMOVZXWD 0(R8), Z11
	VPMOVZXWD 0(R8)(DX*1), Z16
	VPSLLD $16, Z16, Z16
	VPORD Z16, Z11, Z11
	LEAQ (R8)(DX*2), R8
	VPMOVZXWD 0(R8), Z12
	VPMOVZXWD 0(R8)(DX*1), Z16
	VPSLLD $16, Z16, Z16
	VPORD Z16, Z12, Z12
	LEAQ (R8)(DX*2), R8
	VPMOVZXWD 0(R8), Z13
	VPMOVZXWD 0(R8)(DX*1), Z16
	VPSLLD $16, Z16, Z16
	VPORD Z16, Z13, Z13
	LEAQ (R8)(DX*2), R8
	VPMOVZXWD 0(R8), Z14
	VPMOVZXWD 0(R8)(DX*1), Z16
	VPSLLD $16, Z16, Z16
	VPORD Z16, Z14, Z14
	LEAQ (R8)(DX*2), R8
	VPMOVZXWD 0(R8), Z15
	VPMOVZXWD 0(R8)(DX*1), Z16
	VPSLLD $16, Z16, Z16
	VPORD Z16, Z15, Z15
	VPUNPCKLDQ Z1, Z0, Z16
	VPUNPCKHDQ Z1, Z0, Z17
	VPUNPCKLDQ Z3, Z2, Z18
	VPUNPCKHDQ Z3, Z2, Z19
	VPUNPCKLDQ Z5, Z4, Z20
	VPUNPCKHDQ Z5, Z4, Z21
	VPUNPCKLDQ Z7, Z6, Z22
	VPUNPCKHDQ Z7, Z6, Z23
	VPUNPCKLDQ Z9, Z8, Z24
	VPUNPCKHDQ Z9, Z8, Z25
	VPUNPCKLDQ Z11, Z10, Z26
	VPUNPCKHDQ Z11, Z10, Z27
	VPUNPCKLDQ Z13, Z12, Z28
	VPUNPCKHDQ Z13, Z12, Z29
	VPUNPCKLDQ Z15, Z14, Z30
	VPUNPCKHDQ Z15, Z14, Z31
	VPUNPCKLQDQ Z18, Z16, Z0
	VPUNPCKHQDQ Z18, Z16, Z1
	VPUNPCKLQDQ Z19, Z17, Z2
	VPUNPCKHQDQ Z19, Z17, Z3
	VPUNPCKLQDQ Z22, Z20, Z4
	VPUNPCKHQDQ Z22, Z20, Z5
	VPUNPCKLQDQ Z23, Z21, Z6
	VPUNPCKHQDQ Z23, Z21, Z7
	VPUNPCKLQDQ Z26, Z24, Z8
	VPUNPCKHQDQ Z26, Z24, Z9
	VPUNPCKLQDQ Z27, Z25, Z10
	VPUNPCKHQDQ Z27, Z25, Z11
	VPUNPCKLQDQ Z30, Z28, Z12
	VPUNPCKHQDQ Z30, Z28, Z13
	VPUNPCKLQDQ Z31, Z29, Z14
	VPUNPCKHQDQ Z31, Z29, Z15
	VSHUFI32X4 $0x44, Z4, Z0, Z16
	VSHUFI32X4 $0xEE, Z4, Z0, Z17
	VSHUFI32X4 $0x44, Z12, Z8, Z18
	VSHUFI32X4 $0xEE, Z12, Z8, Z19
	VSHUFI32X4 $0x88, Z18, Z16, Z20
	VMOVDQU32 Z20, 0(DI)
	VSHUFI32X4 $0xdd, Z18, Z16, Z20
	VMOVDQU32 Z20, 256(DI)
	VSHUFI32X4 $0x88, Z19, Z17, Z20
	VMOVDQU32 Z20, 512(DI)
	VSHUFI32X4 $0xdd, Z19, Z17, Z20
	VMOVDQU32 Z20, 768(DI)
	VSHUFI32X4 $0x44, Z5, Z1, Z16
	VSHUFI32X4 $0xEE, Z5, Z1, Z17
	VSHUFI32X4 $0x44, Z13, Z9, Z18
	VSHUFI32X4 $0xEE, Z13, Z9, Z19
	VSHUFI32X4 $0x88, Z18, Z16, Z20
	VMOVDQU32 Z20, 64(DI)
	VSHUFI32X4 $0xdd, Z18, Z16, Z20
	VMOVDQU32 Z20, 320(DI)
	VSHUFI32X4 $0x88, Z19, Z17, Z20
	VMOVDQU32 Z20, 576(DI)
	VSHUFI32X4 $0xdd, Z19, Z17, Z20
	VMOVDQU32 Z20, 832(DI)
	VSHUFI32X4 $0x44, Z6, Z2, Z16
	VSHUFI32X4 $0xEE, Z6, Z2, Z17
	VSHUFI32X4 $0x44, Z14, Z10, Z18
	VSHUFI32X4 $0xEE, Z14, Z10, Z19
	VSHUFI32X4 $0x88, Z18, Z16, Z20
	VMOVDQU32 Z20, 128(DI)
	VSHUFI32X4 $0xdd, Z18, Z16, Z20
	VMOVDQU32 Z20, 384(DI)
	VSHUFI32X4 $0x88, Z19, Z17, Z20
	VMOVDQU32 Z20, 640(DI)
	VSHUFI32X4 $0xdd, Z19, Z17, Z20
	VMOVDQU32 Z20, 896(DI)
	VSHUFI32X4 $0x44, Z7, Z3, Z16
	VSHUFI32X4 $0xEE, Z7, Z3, Z17
	VSHUFI32X4 $0x44, Z15, Z11, Z18
	VSHUFI32X4 $0xEE, Z15, Z11, Z19
	VSHUFI32X4 $0x88, Z18, Z16, Z20
	VMOVDQU32 Z20, 192(DI)
	VSHUFI32X4 $0xdd, Z18, Z16, Z20
	VMOVDQU32 Z20, 448(DI)
	VSHUFI32X4 $0x88, Z19, Z17, Z20
	VMOVDQU32 Z20, 704(DI)
	VSHUFI32X4 $0xdd, Z19, Z17, Z20
	VMOVDQU32 Z20, 960(DI)
	MOVQ SI, R8
	VPMOVZXWD 32(R8), Z0
	VPMOVZXWD 32(R8)(DX*1), Z16
	VPSLLD $16, Z16, Z16
	VPORD Z16, Z0, Z0
	LEAQ (R8)(DX*2), R8
	VPMOVZXWD 32(R8), Z1
	VPMOVZXWD 32(R8)(DX*1), Z16
	VPSLLD $16, Z16, Z16
	VPORD Z16, Z1, Z1
	LEAQ (R8)(DX*2), R8
	VPMOVZXWD 32(R8), Z2
	VPMOVZXWD 32(R8)(DX*1), Z16
	VPSLLD $16, Z16, Z16
	VPORD Z16, Z2, Z2
	LEAQ (R8)(DX*2), R8
	VPMOVZXWD 32(R8), Z3
	VPMOVZXWD 32(R8)(DX*1), Z16
	VPSLLD $16, Z16, Z16
	VPORD Z16, Z3, Z3
	LEAQ (R8)(DX*2), R8
	VPMOVZXWD 32(R8), Z4
	VPMOVZXWD 32(R8)(DX*1), Z16
	VPSLLD $16, Z16, Z16
	VPORD Z16, Z4, Z4
	LEAQ (R8)(DX*2), R8
	VPMOVZXWD 32(R8), Z5
	VPMOVZXWD 32(R8)(DX*1), Z16
	VPSLLD $16, Z16, Z16
	VPORD Z16, Z5, Z5
	LEAQ (R8)(DX*2), R8
	VPMOVZXWD 32(R8), Z6
	VPMOVZXWD 32(R8)(DX*1), Z16
	VPSLLD $16, Z16, Z16
	VPORD Z16, Z6, Z6
	LEAQ (R8)(DX*2), R8
	VPMOVZXWD 32(R8), Z7
	VPMOVZXWD 32(R8)(DX*1), Z16
	VPSLLD $16, Z16, Z16
	VPORD Z16, Z7, Z7
	LEAQ (R8)(DX*2), R8
	VPMOVZXWD 32(R8), Z8
	VPMOVZXWD 32(R8)(DX*1), Z16
	VPSLLD $16, Z16, Z16
	VPORD Z16, Z8, Z8
	LEAQ (R8)(DX*2), R8
	VPMOVZXWD 32(R8), Z9
	VPMOVZXWD 32(R8)(DX*1), Z16
	VPSLLD $16, Z16, Z16
	VPORD Z16, Z9, Z9
	LEAQ (R8)(DX*2), R8
	VPMOVZXWD 32(R8), Z10
	VPMOVZXWD 32(R8)(DX*1), Z16
	VPSLLD $16, Z16, Z16
	VPORD Z16, Z10, Z10
	LEAQ (R8)(DX*2), R8
	VPMOVZXWD 32(R8), Z11
	VPMOVZXWD 32(R8)(DX*1), Z16
	VPSLLD $16, Z16, Z16
	VPORD Z16, Z11, Z11
	LEAQ (R8)(DX*2), R8
	VPMOVZXWD 32(R8), Z12
	VPMOVZXWD 32(R8)(DX*1), Z16
	VPSLLD $16, Z16, Z16
	VPORD Z16, Z12, Z12
	LEAQ (R8)(DX*2), R8
	VPMOVZXWD 32(R8), Z13
	VPMOVZXWD 32(R8)(DX*1), Z16
	VPSLLD $16, Z16, Z16
	VPORD Z16, Z13, Z13
	LEAQ (R8)(DX*2), R8
	VPMOVZXWD 32(R8), Z14
	VPMOVZXWD 32(R8)(DX*1), Z16
	VPSLLD $16, Z16, Z16
	VPORD Z16, Z14, Z14
	LEAQ (R8)(DX*2), R8
	VPMOVZXWD 32(R8), Z15
	VPMOVZXWD 32(R8)(DX*1), Z16
	VPSLLD $16, Z16, Z16
	VPORD Z16, Z15, Z15
	VPUNPCKLDQ Z1, Z0, Z16
	VPUNPCKHDQ Z1, Z0, Z17
	VPUNPCKLDQ Z3, Z2, Z18
	VPUNPCKHDQ Z3, Z2, Z19
	VPUNPCKLDQ Z5, Z4, Z20
	VPUNPCKHDQ Z5, Z4, Z21
	VPUNPCKLDQ Z7, Z6, Z22
	VPUNPCKHDQ Z7, Z6, Z23
	VPUNPCKLDQ Z9, Z8, Z24
	VPUNPCKHDQ Z9, Z8, Z25
	VPUNPCKLDQ Z11, Z10, Z26
	VPUNPCKHDQ Z11, Z10, Z27
	VPUNPCKLDQ Z13, Z12, Z28
	VPUNPCKHDQ Z13, Z12, Z29
	VPUNPCKLDQ Z15, Z14, Z30
	VPUNPCKHDQ Z15, Z14, Z31
	VPUNPCKLQDQ Z18, Z16, Z0
	VPUNPCKHQDQ Z18, Z16, Z1
	VPUNPCKLQDQ Z19, Z17, Z2
	VPUNPCKHQDQ Z19, Z17, Z3
	VPUNPCKLQDQ Z22, Z20, Z4
	VPUNPCKHQDQ Z22, Z20, Z5
	VPUNPCKLQDQ Z23, Z21, Z6
	VPUNPCKHQDQ Z23, Z21, Z7
	VPUNPCKLQDQ Z26, Z24, Z8
	VPUNPCKHQDQ Z26, Z24, Z9
	VPUNPCKLQDQ Z27, Z25, Z10
	VPUNPCKHQDQ Z27, Z25, Z11
	VPUNPCKLQDQ Z30, Z28, Z12
	VPUNPCKHQDQ Z30, Z28, Z13
	VPUNPCKLQDQ Z31, Z29, Z14
	VPUNPCKHQDQ Z31, Z29, Z15
	VSHUFI32X4 $0x44, Z4, Z0, Z16
	VSHUFI32X4 $0xEE, Z4, Z0, Z17
	VSHUFI32X4 $0x44, Z12, Z8, Z18
	VSHUFI32X4 $0xEE, Z12, Z8, Z19
	VSHUFI32X4 $0x88, Z18, Z16, Z20
	VMOVDQU32 Z20, 1024(DI)
	VSHUFI32X4 $0xdd, Z18, Z16, Z20
	VMOVDQU32 Z20, 1280(DI)
	VSHUFI32X4 $0x88, Z19, Z17, Z20
	VMOVDQU32 Z20, 1536(DI)
	VSHUFI32X4 $0xdd, Z19, Z17, Z20
	VMOVDQU32 Z20, 1792(DI)
	VSHUFI32X4 $0x44, Z5, Z1, Z16
	VSHUFI32X4 $0xEE, Z5, Z1, Z17
	VSHUFI32X4 $0x44, Z13, Z9, Z18
	VSHUFI32X4 $0xEE, Z13, Z9, Z19
	VSHUFI32X4 $0x88, Z18, Z16, Z20
	VMOVDQU32 Z20, 1088(DI)
	VSHUFI32X4 $0xdd, Z18, Z16, Z20
	VMOVDQU32 Z20, 1344(DI)
	VSHUFI32X4 $0x88, Z19, Z17, Z20
	VMOVDQU32 Z20, 1600(DI)
	VSHUFI32X4 $0xdd, Z19, Z17, Z20
	VMOVDQU32 Z20, 1856(DI)
	VSHUFI32X4 $0x44, Z6, Z2, Z16
	VSHUFI32X4 $0xEE, Z6, Z2, Z17
	VSHUFI32X4 $0x44, Z14, Z10, Z18
	VSHUFI32X4 $0xEE, Z14, Z10, Z19
	VSHUFI32X4 $0x88, Z18, Z16, Z20
	VMOVDQU32 Z20, 1152(DI)
	VSHUFI32X4 $0xdd, Z18, Z16, Z20
	VMOVDQU32 Z20, 1408(DI)
	VSHUFI32X4 $0x88, Z19, Z17, Z20
	VMOVDQU32 Z20, 1664(DI)
	VSHUFI32X4 $0xdd, Z19, Z17, Z20
	VMOVDQU32 Z20, 1920(DI)
	VSHUFI32X4 $0x44, Z7, Z3, Z16
	VSHUFI32X4 $0xEE, Z7, Z3, Z17
	VSHUFI32X4 $0x44, Z15, Z11, Z18
	VSHUFI32X4 $0xEE, Z15, Z11, Z19
	VSHUFI32X4 $0x88, Z18, Z16, Z20
	VMOVDQU32 Z20, 1216(DI)
	VSHUFI32X4 $0xdd, Z18, Z16, Z20
	VMOVDQU32 Z20, 1472(DI)
	VSHUFI32X4 $0x88, Z19, Z17, Z20
	VMOVDQU32 Z20, 1728(DI)
	VSHUFI32X4 $0xdd, Z19, Z17, Z20
	VMOVDQU32 Z20, 1984(DI)
	VZEROUPPER
	RET
