//go:build !noasm && amd64

#include "textflag.h"
#include "pack_f32_amd64.h"

// The float32 GEMM packers of whole panels (the layouts of gemm_pack.go);
// the Go packers handle edge panels, depth tails and 16-bit sources, and
// the Go wrappers (pack_f32_amd64.go) check pointers and counts.

// PACKARGS loads the packers' common arguments: dst in DI, src in SI, ld
// in bytes in DX and k in CX.
#define PACKARGS \
	MOVQ dst+0(FP), DI; \
	MOVQ src+8(FP), SI; \
	MOVQ ld+16(FP), DX; \
	SHLQ $2, DX; \
	MOVQ k+24(FP), CX

// func sgemmCopyRows16AVX2(dst, src *float32, ld, k int)
//
// Copies k rows of 16 floats, ld floats apart at src, to dst as k·16
// contiguous floats: a full panel of op(B) = B.
TEXT ·sgemmCopyRows16AVX2(SB), NOSPLIT, $0-32
	PACKARGS
	TESTQ CX, CX
	JZ   copydone

copyloop:
	VMOVUPS (SI), Y0
	VMOVUPS 32(SI), Y1
	VMOVUPS Y0, (DI)
	VMOVUPS Y1, 32(DI)
	ADDQ    DX, SI
	ADDQ    $64, DI
	DECQ    CX
	JNZ     copyloop

copydone:
	VZEROUPPER
	RET

// SCALEROWS6 loads 8 floats of each of rows 0..5 at SI (ld bytes in DX,
// 3·ld in R8) times alpha (Y15) into Y0..Y5, leaving row 4 at R9.
#define SCALEROWS6 \
	MOVQ   SI, R9; \
	VMULPS (R9), Y15, Y0; \
	VMULPS (R9)(DX*1), Y15, Y1; \
	VMULPS (R9)(DX*2), Y15, Y2; \
	VMULPS (R9)(R8*1), Y15, Y3; \
	LEAQ   (R9)(DX*4), R9; \
	VMULPS (R9), Y15, Y4; \
	VMULPS (R9)(DX*1), Y15, Y5

// func sgemmPackA6AVX2(dst, src *float32, ld, k int, alpha float32)
//
// Interleaves 6 rows of k floats (k a multiple of 8), ld floats apart at
// src, into dst as k groups of 6, times alpha: a full panel of op(A) = A.
TEXT ·sgemmPackA6AVX2(SB), NOSPLIT, $0-36
	PACKARGS
	SHRQ $3, CX
	JZ   a6done
	LEAQ (DX)(DX*2), R8 // 3·ld bytes

a6loop:
	VBROADCASTSS alpha+32(FP), Y15
	SCALEROWS6
	VXORPS  Y6, Y6, Y6
	VXORPS  Y7, Y7, Y7
	TRANSPOSE8
	// Column j of the block is group j: its first 6 floats go to dst.
	VMOVUPS      X8, (DI)
	VEXTRACTF128 $1, Y8, X0
	VMOVSD       X0, 16(DI)
	VMOVUPS      X9, 24(DI)
	VEXTRACTF128 $1, Y9, X0
	VMOVSD       X0, 40(DI)
	VMOVUPS      X10, 48(DI)
	VEXTRACTF128 $1, Y10, X0
	VMOVSD       X0, 64(DI)
	VMOVUPS      X11, 72(DI)
	VEXTRACTF128 $1, Y11, X0
	VMOVSD       X0, 88(DI)
	VMOVUPS      X12, 96(DI)
	VEXTRACTF128 $1, Y12, X0
	VMOVSD       X0, 112(DI)
	VMOVUPS      X13, 120(DI)
	VEXTRACTF128 $1, Y13, X0
	VMOVSD       X0, 136(DI)
	VMOVUPS      X14, 144(DI)
	VEXTRACTF128 $1, Y14, X0
	VMOVSD       X0, 160(DI)
	VMOVUPS      X15, 168(DI)
	VEXTRACTF128 $1, Y15, X0
	VMOVSD       X0, 184(DI)
	ADDQ    $32, SI
	ADDQ    $192, DI
	DECQ    CX
	JNZ     a6loop

a6done:
	VZEROUPPER
	RET

// func sgemmPackBTAVX2(dst, src *float32, ld, k, nr int)
//
// Gathers nr runs of k floats (nr and k multiples of 8), ld floats apart
// at src, into dst as k groups of nr: a full panel of op(B) = Bᵀ. Each 8
// depths × 8 runs are one 8×8 transpose.
TEXT ·sgemmPackBTAVX2(SB), NOSPLIT, $0-40
	PACKARGS
	SHRQ $3, CX
	JZ   btdone
	MOVQ nr+32(FP), AX
	LEAQ (AX*4), BX      // group stride in bytes
	SHRQ $3, AX          // blocks of 8 runs
	LEAQ (DX)(DX*2), R8  // 3·ld bytes
	LEAQ (BX)(BX*2), R12 // 3 groups

btloop:
	MOVQ SI, R9
	MOVQ DI, R10
	MOVQ AX, R11

btblock:
	VMOVUPS (R9), Y0
	VMOVUPS (R9)(DX*1), Y1
	VMOVUPS (R9)(DX*2), Y2
	VMOVUPS (R9)(R8*1), Y3
	LEAQ    (R9)(DX*4), R9
	VMOVUPS (R9), Y4
	VMOVUPS (R9)(DX*1), Y5
	VMOVUPS (R9)(DX*2), Y6
	VMOVUPS (R9)(R8*1), Y7
	LEAQ    (R9)(DX*4), R9
	TRANSPOSE8
	VMOVUPS Y8, (R10)
	VMOVUPS Y9, (R10)(BX*1)
	VMOVUPS Y10, (R10)(BX*2)
	VMOVUPS Y11, (R10)(R12*1)
	LEAQ    (R10)(BX*4), R13
	VMOVUPS Y12, (R13)
	VMOVUPS Y13, (R13)(BX*1)
	VMOVUPS Y14, (R13)(BX*2)
	VMOVUPS Y15, (R13)(R12*1)
	ADDQ    $32, R10
	DECQ    R11
	JNZ     btblock

	ADDQ $32, SI
	LEAQ (DI)(BX*8), DI
	DECQ CX
	JNZ  btloop

btdone:
	VZEROUPPER
	RET

// func sgemmPackAT6AVX2(dst, src *float32, ld, k int, alpha float32)
//
// Copies k rows of 6 floats, ld floats apart at src, to dst as k groups of
// 6, times alpha: a full panel of op(A) = Aᵀ.
TEXT ·sgemmPackAT6AVX2(SB), NOSPLIT, $0-36
	PACKARGS
	VBROADCASTSS alpha+32(FP), X15
	TESTQ CX, CX
	JZ   atdone

atloop:
	VMULPS  (SI), X15, X0
	VMOVSD  16(SI), X1
	VMULPS  X1, X15, X1
	VMOVUPS X0, (DI)
	VMOVSD  X1, 16(DI)
	ADDQ    DX, SI
	ADDQ    $24, DI
	DECQ    CX
	JNZ     atloop

atdone:
	VZEROUPPER
	RET

// func sgemmPackA12AVX2(dst, src *float32, ld, k int, alpha float32)
//
// Interleaves 12 rows of k floats (k a multiple of 8), ld floats apart at
// src, into dst as k groups of 12, times alpha: a full panel of op(A) = A
// for the 12-row kernel. Per 8 depths, rows 8..11 are a 4×8 transpose
// within 128-bit lanes and rows 0..7 an 8×8 one; group j (48 bytes) takes
// column j of both.
TEXT ·sgemmPackA12AVX2(SB), NOSPLIT, $0-36
	PACKARGS
	SHRQ $3, CX
	JZ   a12done
	LEAQ (DX)(DX*2), R8  // 3·ld bytes
	LEAQ (SI)(DX*8), R10 // row 8

a12loop:
	VBROADCASTSS alpha+32(FP), Y15
	// Rows 8..11: Y0..Y3 end up holding depths j (low lane) and j+4.
	VMULPS       (R10), Y15, Y0
	VMULPS       (R10)(DX*1), Y15, Y1
	VMULPS       (R10)(DX*2), Y15, Y2
	VMULPS       (R10)(R8*1), Y15, Y3
	VUNPCKLPS    Y1, Y0, Y4
	VUNPCKHPS    Y1, Y0, Y5
	VUNPCKLPS    Y3, Y2, Y6
	VUNPCKHPS    Y3, Y2, Y7
	VSHUFPS      $0x44, Y6, Y4, Y0
	VSHUFPS      $0xEE, Y6, Y4, Y1
	VSHUFPS      $0x44, Y7, Y5, Y2
	VSHUFPS      $0xEE, Y7, Y5, Y3
	VMOVUPS      X0, 32(DI)
	VMOVUPS      X1, 80(DI)
	VMOVUPS      X2, 128(DI)
	VMOVUPS      X3, 176(DI)
	VEXTRACTF128 $1, Y0, 224(DI)
	VEXTRACTF128 $1, Y1, 272(DI)
	VEXTRACTF128 $1, Y2, 320(DI)
	VEXTRACTF128 $1, Y3, 368(DI)

	// Rows 0..7.
	SCALEROWS6
	VMULPS  (R9)(DX*2), Y15, Y6
	VMULPS  (R9)(R8*1), Y15, Y7
	TRANSPOSE8
	VMOVUPS Y8, (DI)
	VMOVUPS Y9, 48(DI)
	VMOVUPS Y10, 96(DI)
	VMOVUPS Y11, 144(DI)
	VMOVUPS Y12, 192(DI)
	VMOVUPS Y13, 240(DI)
	VMOVUPS Y14, 288(DI)
	VMOVUPS Y15, 336(DI)
	ADDQ    $32, SI
	ADDQ    $32, R10
	ADDQ    $384, DI
	DECQ    CX
	JNZ     a12loop

a12done:
	VZEROUPPER
	RET

// func sgemmPackAT12AVX2(dst, src *float32, ld, k int, alpha float32)
//
// Copies k rows of 12 floats, ld floats apart at src, to dst as k groups
// of 12, times alpha: a full panel of op(A) = Aᵀ for the 12-row kernel.
TEXT ·sgemmPackAT12AVX2(SB), NOSPLIT, $0-36
	PACKARGS
	VBROADCASTSS alpha+32(FP), Y15
	TESTQ        CX, CX
	JZ           at12done

at12loop:
	VMULPS  (SI), Y15, Y0
	VMULPS  32(SI), X15, X1
	VMOVUPS Y0, (DI)
	VMOVUPS X1, 32(DI)
	ADDQ    DX, SI
	ADDQ    $48, DI
	DECQ    CX
	JNZ     at12loop

at12done:
	VZEROUPPER
	RET

// func sgemmCopyRows32AVX512(dst, src *float32, ld, k int)
//
// Copies k rows of 32 floats, ld floats apart at src, to dst as k·32
// contiguous floats: a full panel of op(B) = B for the 32-column kernel.
TEXT ·sgemmCopyRows32AVX512(SB), NOSPLIT, $0-32
	PACKARGS
	TESTQ CX, CX
	JZ    copy32done

copy32loop:
	VMOVUPS (SI), Z0
	VMOVUPS 64(SI), Z1
	VMOVUPS Z0, (DI)
	VMOVUPS Z1, 64(DI)
	ADDQ    DX, SI
	ADDQ    $128, DI
	DECQ    CX
	JNZ     copy32loop

copy32done:
	VZEROUPPER
	RET
