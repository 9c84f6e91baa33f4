//go:build amd64 && !noasm

#include "textflag.h"

// Offsets of convPerm's fields (conv_perm.go).
#define VALID 1152
#define LOAD 1224
#define STORE 1232

// func im2colPermAVX512(dst *uint16, ld int, x *uint16, xs, ns, nbs, t0, t1 int, t *convPerm)
// For each of the ns samples: the plane's words (masked) into Z0 and Z1,
// then per tap one VPERMI2W per half of the outputs, zeroed where the
// tap reads padding, stored under the outputs' mask.
TEXT ·im2colPermAVX512(SB), NOSPLIT, $0-72
	MOVQ  dst+0(FP), DI
	MOVQ  ld+8(FP), R8
	SHLQ  $1, R8 // bytes from one tap's row to the next
	MOVQ  x+16(FP), SI
	MOVQ  xs+24(FP), R9
	SHLQ  $1, R9 // bytes from one sample's plane to the next
	MOVQ  ns+32(FP), CX
	MOVQ  nbs+40(FP), R10
	SHLQ  $1, R10 // bytes of one sample's outputs
	MOVQ  t0+48(FP), R11
	MOVQ  t1+56(FP), R12
	MOVQ  t+64(FP), BX
	KMOVD LOAD(BX), K1
	KMOVD LOAD+4(BX), K2
	KMOVD STORE(BX), K3
	KMOVD STORE+4(BX), K4

sample:
	VMOVDQU16.Z (SI), K1, Z0
	VMOVDQU16.Z 64(SI), K2, Z1
	MOVQ DI, R13
	MOVQ R11, R14

tap:
	MOVQ       R14, AX
	SHLQ       $7, AX // 128 bytes of indices per tap
	VMOVDQU16  (BX)(AX*1), Z4
	KMOVD      VALID(BX)(R14*8), K5
	VPERMI2W.Z Z1, Z0, K5, Z4
	VMOVDQU16  Z4, K3, (R13)
	CMPQ       R10, $64
	JLE        next
	VMOVDQU16  64(BX)(AX*1), Z5
	KMOVD      VALID+4(BX)(R14*8), K6
	VPERMI2W.Z Z1, Z0, K6, Z5
	VMOVDQU16  Z5, K4, 64(R13)

next:
	ADDQ R8, R13
	INCQ R14
	CMPQ R14, R12
	JLT  tap
	ADDQ R9, SI
	ADDQ R10, DI
	DECQ CX
	JNZ  sample
	VZEROUPPER
	RET

// Offsets of convUnperm's fields (conv_unperm.go).
#define UHI 2304
#define UVALID 2376
#define ULOAD 2448
#define USTORE 2456

// UQUARTER(q, acc) adds to acc (merge-masked by the pixels the tap
// reaches) quarter q of the current tap's row permuted: two VPERMI2PS,
// over Z0:Z1 (columns 0–31) and Z2:Z3 (32–63), the second taken where the
// column is ≥ 32. R14 is the tap's offset in idx (256 bytes a tap), R15
// in hi and valid (8 bytes a tap). UQUARTER1 is UQUARTER for rows of at
// most 32 columns: one VPERMI2PS.
#define UQUARTER(q, acc) \
	VMOVDQU32 (q*64)(BX)(R14*1), Z8     \
	VMOVDQA32 Z8, Z9                    \
	VPERMI2PS Z1, Z0, Z8                \
	VPERMI2PS Z3, Z2, Z9                \
	KMOVW     (UHI+q*2)(BX)(R15*1), K5  \
	VMOVAPS   Z9, K5, Z8                \
	KMOVW     (UVALID+q*2)(BX)(R15*1), K6 \
	VADDPS    Z8, acc, K6, acc

#define UQUARTER1(q, acc) \
	VMOVDQU32 (q*64)(BX)(R14*1), Z8     \
	VPERMI2PS Z1, Z0, Z8                \
	KMOVW     (UVALID+q*2)(BX)(R15*1), K6 \
	VADDPS    Z8, acc, K6, acc

// UTAPS(Q, lbl, next) is the loop over the rs taps (CX) with quarter
// macro Q over the plane's R9 quarters.
#define UTAPS(Q, lbl, next) \
lbl:                              \
	VMOVUPS.Z (SI), K1, Z0        \
	VMOVUPS.Z 64(SI), K2, Z1      \
	VMOVUPS.Z 128(SI), K3, Z2     \
	VMOVUPS.Z 192(SI), K4, Z3     \
	Q(0, Z4)                      \
	CMPQ R9, $1                   \
	JLE  next                     \
	Q(1, Z5)                      \
	CMPQ R9, $2                   \
	JLE  next                     \
	Q(2, Z6)                      \
	CMPQ R9, $3                   \
	JLE  next                     \
	Q(3, Z7)                      \
next:                             \
	ADDQ R8, SI                   \
	ADDQ $256, R14                \
	ADDQ $8, R15                  \
	DECQ CX                       \
	JNZ  lbl

// func col2imPermAVX512(dx, col *float32, ld, rs, quarters, wide int, t *convUnperm)
// quarters: ⌈hw/16⌉; wide: whether a tile row has more than 32 columns.
TEXT ·col2imPermAVX512(SB), NOSPLIT, $0-56
	MOVQ   dx+0(FP), DI
	MOVQ   col+8(FP), SI
	MOVQ   ld+16(FP), R8
	SHLQ   $2, R8 // bytes from one tap's row to the next
	MOVQ   rs+24(FP), CX
	MOVQ   quarters+32(FP), R9
	MOVQ   wide+40(FP), R10
	MOVQ   t+48(FP), BX
	KMOVW  ULOAD(BX), K1
	KMOVW  ULOAD+2(BX), K2
	KMOVW  ULOAD+4(BX), K3
	KMOVW  ULOAD+6(BX), K4
	VPXORD Z4, Z4, Z4
	VPXORD Z5, Z5, Z5
	VPXORD Z6, Z6, Z6
	VPXORD Z7, Z7, Z7
	XORQ   R14, R14
	XORQ   R15, R15
	TESTQ  R10, R10
	JNZ    wide
	UTAPS(UQUARTER1, narrowtap, narrownext)
	JMP    ustore

wide:
	UTAPS(UQUARTER, widetap, widenext)

ustore:
	KMOVW   USTORE(BX), K1
	KMOVW   USTORE+2(BX), K2
	KMOVW   USTORE+4(BX), K3
	KMOVW   USTORE+6(BX), K4
	VMOVUPS Z4, K1, (DI)
	VMOVUPS Z5, K2, 64(DI)
	VMOVUPS Z6, K3, 128(DI)
	VMOVUPS Z7, K4, 192(DI)
	VZEROUPPER
	RET

// GQUARTER(q, k) stores quarter q of the current tap's row (R14: the
// tap's offset in idx, R15 in hi and valid) permuted from the plane in
// Z0..Z3, zero where the tap reads padding, under the row's mask for that
// quarter (k), at (q·64)(R13). K1 is scratch.
#define GQUARTER(q, k) \
	VMOVDQU32   (q*64)(BX)(R14*1), Z8     \
	VMOVDQA32   Z8, Z9                    \
	VPERMI2PS   Z1, Z0, Z8                \
	VPERMI2PS   Z3, Z2, Z9                \
	KMOVW       (UHI+q*2)(BX)(R15*1), K1  \
	VMOVAPS     Z9, K1, Z8                \
	KMOVW       (UVALID+q*2)(BX)(R15*1), K1 \
	VMOVAPS.Z   Z8, K1, Z8                \
	VMOVUPS     Z8, k, (q*64)(R13)

// func im2colPermF32AVX512(dst *float32, ld int, x *float32, xs, ns, nbs, t0, t1 int, t *convUnperm)
// For each of the ns samples: the plane's floats (masked) into Z0..Z3,
// then per tap and quarter of the ⌈nbs/16⌉ of its row, GQUARTER.
TEXT ·im2colPermF32AVX512(SB), NOSPLIT, $0-72
	MOVQ  dst+0(FP), DI
	MOVQ  ld+8(FP), R8
	SHLQ  $2, R8 // bytes from one tap's row to the next
	MOVQ  x+16(FP), SI
	MOVQ  xs+24(FP), R9
	SHLQ  $2, R9 // bytes from one sample's plane to the next
	MOVQ  ns+32(FP), CX
	MOVQ  nbs+40(FP), R10
	SHLQ  $2, R10 // bytes of one sample's outputs
	MOVQ  t0+48(FP), R11
	MOVQ  t1+56(FP), R12
	MOVQ  t+64(FP), BX
	KMOVW USTORE(BX), K5
	KMOVW USTORE+2(BX), K6
	KMOVW USTORE+4(BX), K7

gsample:
	KMOVW     ULOAD(BX), K2
	KMOVW     ULOAD+2(BX), K3
	KMOVW     ULOAD+4(BX), K4
	KMOVW     ULOAD+6(BX), K1
	VMOVUPS.Z (SI), K2, Z0
	VMOVUPS.Z 64(SI), K3, Z1
	VMOVUPS.Z 128(SI), K4, Z2
	VMOVUPS.Z 192(SI), K1, Z3
	KMOVW     USTORE+6(BX), K4 // the last quarter's row mask (the load masks are reloaded per sample)
	MOVQ      DI, R13
	MOVQ      R11, R14
	SHLQ      $8, R14 // 256 bytes of indices per tap
	MOVQ      R11, R15
	SHLQ      $3, R15 // 8 bytes of hi (and valid) per tap
	MOVQ      R11, AX // the tap

gtap:
	GQUARTER(0, K5)
	CMPQ R10, $64
	JLE  gnext
	GQUARTER(1, K6)
	CMPQ R10, $128
	JLE  gnext
	GQUARTER(2, K7)
	CMPQ R10, $192
	JLE  gnext
	GQUARTER(3, K4)

gnext:
	ADDQ R8, R13
	ADDQ $256, R14
	ADDQ $8, R15
	INCQ AX
	CMPQ AX, R12
	JLT  gtap
	ADDQ R9, SI
	ADDQ R10, DI
	DECQ CX
	JNZ  gsample
	VZEROUPPER
	RET
