//go:build !noasm && amd64

#include "textflag.h"
#include "gemm_avx512_amd64.h"
#include "gemm_bf16_amd64.h"

// The AVX512_BF16 GEMM micro-kernel: one 12×32 tile of C in float32 from
// bfloat16 panels packed in pairs (see gemm_bf16.go): A as ⌈k/2⌉ groups of
// 12 dwords, each the pair (A[r][2p], A[r][2p+1]) low word first, and B as
// ⌈k/2⌉ groups of 32 dwords (B[2p][j], B[2p+1][j]). One VDPBF16PS does two
// k steps of 16 columns: each lane adds the products of both halves of
// its pair, so a pair step is 2 loads of B, 12 broadcasts of an A pair and
// 24 VDPBF16PS — the float32 kernel's k step doing twice the work.
// DPBF16, PAIRROW, PAIRROWS6 and PAIRROWS6HI are in gemm_bf16_amd64.h.

// PAIRSTEP6(ao, bo) does one pair step of the first six rows.
#define PAIRSTEP6(ao, bo) \
	VMOVUPS bo(BX), Z24; \
	VMOVUPS bo+64(BX), Z25; \
	PAIRROWS6(ao)

// PAIRSTEP(ao, bo) does one pair step of all twelve rows.
#define PAIRSTEP(ao, bo) \
	PAIRSTEP6(ao, bo); \
	PAIRROWS6HI(ao)

// PAIRARGS is ARGS for the pair kernels: ⌈k/2⌉ pairs in CX (DX is left
// for the kernel to set), a in AX, b in BX, c in DI, ldc in bytes in SI.
#define PAIRARGS \
	ARGS; \
	INCQ CX; \
	SHRQ $1, CX

// func sbgemmKernelAVX512BF16(k int, a, b, c *float32, ldc int, beta float32, mode int)
//
// Modes as sgemmKernelAVX512 (0 C = A·B, 1 C += A·B, 2 C = A·B + beta·C);
// ldc is in elements. The caller guarantees k ≥ 0, 12⌈k/2⌉ dwords at a,
// 32⌈k/2⌉ at b and a full 12×32 tile at c.
TEXT ·sbgemmKernelAVX512BF16(SB), NOSPLIT, $0-56
	PAIRARGS
	ZERO24
	MOVQ CX, DX
	SHRQ $1, DX
	JZ   tail

loop2:
	PREFETCHT0 384(AX)
	PAIRSTEP(0, 0)
	PAIRSTEP(48, 128)
	ADDQ $96, AX
	ADDQ $256, BX
	DECQ DX
	JNZ  loop2

tail:
	ANDQ $1, CX
	JZ   store
	PAIRSTEP(0, 0)

store:
	JMP ·gemmStore12x32AVX512(SB)

// func sbgemmKernelAVX512BF16Half(k int, a, b, c *float32, ldc int, beta float32, mode int)
//
// sbgemmKernelAVX512BF16 for the first six rows of the tile (the edge
// tiles of M mod 12 ≤ 6): the A panel is still 12 dwords per pair, and
// only six rows of C are read or written.
TEXT ·sbgemmKernelAVX512BF16Half(SB), NOSPLIT, $0-56
	PAIRARGS
	ZERO12
	MOVQ CX, DX
	SHRQ $1, DX
	JZ   tailh

loop2h:
	PREFETCHT0 384(AX)
	PAIRSTEP6(0, 0)
	PAIRSTEP6(48, 128)
	ADDQ $96, AX
	ADDQ $256, BX
	DECQ DX
	JNZ  loop2h

tailh:
	ANDQ $1, CX
	JZ   storeh
	PAIRSTEP6(0, 0)

storeh:
	JMP ·gemmStore6x32AVX512(SB)

// PAIRSTEP16(ao, bo) does one pair step of all twelve rows for the first
// 16 columns (the low half of B's pair row).
#define PAIRSTEP16(ao, bo) \
	VMOVUPS bo(BX), Z24; \
	VPBROADCASTD ao+0(AX), Z26; \
	DPBF16(0, 26, 24); \
	VPBROADCASTD ao+4(AX), Z27; \
	DPBF16(1, 27, 24); \
	VPBROADCASTD ao+8(AX), Z28; \
	DPBF16(2, 28, 24); \
	VPBROADCASTD ao+12(AX), Z29; \
	DPBF16(3, 29, 24); \
	VPBROADCASTD ao+16(AX), Z30; \
	DPBF16(4, 30, 24); \
	VPBROADCASTD ao+20(AX), Z31; \
	DPBF16(5, 31, 24); \
	VPBROADCASTD ao+24(AX), Z26; \
	DPBF16(6, 26, 24); \
	VPBROADCASTD ao+28(AX), Z27; \
	DPBF16(7, 27, 24); \
	VPBROADCASTD ao+32(AX), Z28; \
	DPBF16(8, 28, 24); \
	VPBROADCASTD ao+36(AX), Z29; \
	DPBF16(9, 29, 24); \
	VPBROADCASTD ao+40(AX), Z30; \
	DPBF16(10, 30, 24); \
	VPBROADCASTD ao+44(AX), Z31; \
	DPBF16(11, 31, 24)

// STORE16(z), ADDROW16(z) and BETAROW16(z) are STORE, ADDROW and
// BETAROW for a row of 16 columns, held in z.
#define STORE16(z) \
	VMOVUPS z, (DI); \
	ADDQ    SI, DI

#define ADDROW16(z) \
	VADDPS  (DI), z, z; \
	VMOVUPS z, (DI);    \
	ADDQ    SI, DI

#define BETAROW16(z) \
	VFMADD231PS (DI), Z24, z; \
	VMOVUPS     z, (DI);      \
	ADDQ        SI, DI

// func sbgemmKernelAVX512BF16Narrow(k int, a, b, c *float32, ldc int, beta float32, mode int)
//
// sbgemmKernelAVX512BF16 for the first 16 columns of the tile (the edge
// tiles of N mod 32 ≤ 16): the B panel is still 32 dwords per pair, and
// only 16 columns of C are read or written. Row r accumulates in Z(r).
TEXT ·sbgemmKernelAVX512BF16Narrow(SB), NOSPLIT, $0-56
	PAIRARGS
	ZERO12
	MOVQ CX, DX
	SHRQ $1, DX
	JZ   tailn

loop2n:
	PREFETCHT0 384(AX)
	PAIRSTEP16(0, 0)
	PAIRSTEP16(48, 128)
	ADDQ $96, AX
	ADDQ $256, BX
	DECQ DX
	JNZ  loop2n

tailn:
	ANDQ $1, CX
	JZ   storen
	PAIRSTEP16(0, 0)

storen:
	MOVQ mode+48(FP), DX
	CMPQ DX, $1
	JEQ  addn
	CMPQ DX, $2
	JEQ  betan
	STORE16(Z0)
	STORE16(Z1)
	STORE16(Z2)
	STORE16(Z3)
	STORE16(Z4)
	STORE16(Z5)
	STORE16(Z6)
	STORE16(Z7)
	STORE16(Z8)
	STORE16(Z9)
	STORE16(Z10)
	STORE16(Z11)
	VZEROUPPER
	RET

addn:
	ADDROW16(Z0)
	ADDROW16(Z1)
	ADDROW16(Z2)
	ADDROW16(Z3)
	ADDROW16(Z4)
	ADDROW16(Z5)
	ADDROW16(Z6)
	ADDROW16(Z7)
	ADDROW16(Z8)
	ADDROW16(Z9)
	ADDROW16(Z10)
	ADDROW16(Z11)
	VZEROUPPER
	RET

betan:
	VBROADCASTSS beta+40(FP), Z24
	BETAROW16(Z0)
	BETAROW16(Z1)
	BETAROW16(Z2)
	BETAROW16(Z3)
	BETAROW16(Z4)
	BETAROW16(Z5)
	BETAROW16(Z6)
	BETAROW16(Z7)
	BETAROW16(Z8)
	BETAROW16(Z9)
	BETAROW16(Z10)
	BETAROW16(Z11)
	VZEROUPPER
	RET
