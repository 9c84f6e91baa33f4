//go:build !noasm && amd64

#include "textflag.h"

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

// func amxKernelBF16(kb int, a, b, c *float32, ldc int, tmp *float32, beta float32, mode int, astride, astep int)
//
// kb ≥ 1 16-pair steps; ldc in elements. A row r of step s is the 64
// bytes at a + s·astep + r·astride (a packed panel: 2048 and 64; rows of
// bfloat16 read in place: 64 and their distance in bytes). Mode 0:
// C = A·B; mode 1: C's tile is loaded into the accumulators and A·B added
// to it; mode 2: A·B goes to tmp (32×32 float32, rows 32 apart) and
// C = A·B + beta·C with one rounding (VFMADD231PS); mode 3: tmp is a row
// of 32 float32 (a bias) that every row's sums start from, as mode 1
// from a C holding it in every row. The caller guarantees
// the kb steps of 32 A rows at a, 512·kb dwords at b and a whole tile
// at c.
TEXT ·amxKernelBF16(SB), NOSPLIT, $0-80
	MOVQ kb+0(FP), CX
	MOVQ a+8(FP), AX
	MOVQ b+16(FP), BX
	MOVQ c+24(FP), DI
	MOVQ ldc+32(FP), SI
	SHLQ $2, SI
	MOVQ tmp+40(FP), R11
	MOVQ mode+56(FP), R12
	LEAQ amxcfg<>(SB), DX
	LDTILECFG_DX
	MOVQ astride+64(FP), R9
	MOVQ astep+72(FP), R13
	MOVQ R9, DX
	SHLQ $4, DX
	ADDQ AX, DX
	MOVQ $128, R10
	MOVQ SI, R8
	SHLQ $4, R8
	ADDQ DI, R8
	CMPQ R12, $1
	JEQ  loadc
	CMPQ R12, $3
	JNE  zero
	// Mode 3: every row of the accumulators from the bias row at tmp
	// (stride 0), then C's addresses back for the store.
	MOVQ R11, DI
	XORQ SI, SI
	MOVQ R11, R8
	LOADC
	MOVQ c+24(FP), DI
	MOVQ ldc+32(FP), SI
	SHLQ $2, SI
	MOVQ SI, R8
	SHLQ $4, R8
	ADDQ DI, R8
	JMP  loop

loadc:
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
	CMPQ R12, $2
	JEQ  beta
	STOREC
	TILERELEASE
	RET

beta:
	STORETMP
	TILERELEASE
	VBROADCASTSS beta+48(FP), Z2
	MOVQ         $32, CX

betarow:
	VMOVUPS     (R11), Z0
	VMOVUPS     64(R11), Z1
	VFMADD231PS (DI), Z2, Z0
	VFMADD231PS 64(DI), Z2, Z1
	VMOVUPS     Z0, (DI)
	VMOVUPS     Z1, 64(DI)
	ADDQ        $128, R11
	ADDQ        SI, DI
	DECQ        CX
	JNZ         betarow
	VZEROUPPER
	RET

// The dword offsets of rows 0–15 within a step of an AMX A panel.
DATA amxrows<>+0(SB)/8, $0x0000001000000000
DATA amxrows<>+8(SB)/8, $0x0000003000000020
DATA amxrows<>+16(SB)/8, $0x0000005000000040
DATA amxrows<>+24(SB)/8, $0x0000007000000060
DATA amxrows<>+32(SB)/8, $0x0000009000000080
DATA amxrows<>+40(SB)/8, $0x000000b0000000a0
DATA amxrows<>+48(SB)/8, $0x000000d0000000c0
DATA amxrows<>+56(SB)/8, $0x000000f0000000e0
GLOBL amxrows<>(SB), RODATA|NOPTR, $64

// func amxStepColsAVX512(blk *uint32, h *uint16, ld int)
//
// One whole step of an AMX A panel from op(A) = Aᵀ (amxStepCols is its
// twin): for each pair t, depths 2t and 2t+1 of rows 0–31 are two runs of
// 32 values ld apart at h; they are widened, combined into pair words and
// scattered to column t of the step's 32 rows (dword r·16 + t of blk).
TEXT ·amxStepColsAVX512(SB), NOSPLIT, $0-24
	MOVQ    blk+0(FP), DI
	MOVQ    h+8(FP), SI
	MOVQ    ld+16(FP), DX
	SHLQ    $1, DX            // bytes between depths
	VMOVDQU32 amxrows<>(SB), Z4
	MOVQ    $16, CX

pair:
	VPMOVZXWD (SI), Z0
	VPMOVZXWD (SI)(DX*1), Z1
	VPMOVZXWD 32(SI), Z2
	VPMOVZXWD 32(SI)(DX*1), Z3
	VPSLLD    $16, Z1, Z1
	VPSLLD    $16, Z3, Z3
	VPORD     Z1, Z0, Z0
	VPORD     Z3, Z2, Z2
	KXNORW    K1, K1, K1
	VPSCATTERDD Z0, K1, (DI)(Z4*4)
	KXNORW    K2, K2, K2
	VPSCATTERDD Z2, K2, 1024(DI)(Z4*4)
	ADDQ      $4, DI
	LEAQ      (SI)(DX*2), SI
	DECQ      CX
	JNZ       pair
	VZEROUPPER
	RET
