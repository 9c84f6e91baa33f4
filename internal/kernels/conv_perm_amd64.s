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
