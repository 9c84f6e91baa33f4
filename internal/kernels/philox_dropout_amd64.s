//go:build amd64 && !noasm

#include "textflag.h"

// dropKeep's AVX-512 loops: a lane's word ≥ thr (unsigned) sets its bit
// of K1; the element is widened to float64 (exact), multiplied by scale
// in float64 (VMULPD rounds as MULSD does) with zero masking, so a dropped
// lane is +0 whatever its input, and rounded back to float32 by VCVTPD2PS
// (as CVTSD2SS does): the bits of dropOne, lane by lane.

// func dropKeep32AVX512(dst, src *float32, words *uint32, n int, thr uint32, scale float64)
// n is a multiple of 16.
TEXT ·dropKeep32AVX512(SB), NOSPLIT, $0-48
	MOVQ         dst+0(FP), DI
	MOVQ         src+8(FP), SI
	MOVQ         words+16(FP), BX
	MOVQ         n+24(FP), CX
	MOVL         thr+32(FP), AX
	VPBROADCASTD AX, Z7
	VBROADCASTSD scale+40(FP), Z6
	SHRQ         $4, CX
	JZ           done32

loop32:
	VMOVDQU32   (BX), Z0
	VPCMPUD     $5, Z7, Z0, K1 // K1 = words ≥ thr
	KSHIFTRW    $8, K1, K2
	VCVTPS2PD   (SI), Z1
	VCVTPS2PD   32(SI), Z2
	VMULPD.Z    Z6, Z1, K1, Z1
	VMULPD.Z    Z6, Z2, K2, Z2
	VCVTPD2PS   Z1, Y1
	VCVTPD2PS   Z2, Y2
	VINSERTF64X4 $1, Y2, Z1, Z1
	VMOVUPS     Z1, (DI)
	ADDQ        $64, BX
	ADDQ        $64, SI
	ADDQ        $64, DI
	DECQ        CX
	JNZ         loop32

done32:
	VZEROUPPER
	RET

// func dropKeep64AVX512(dst, src *float64, words *uint32, n int, thr uint32, scale float64)
// n is a multiple of 8.
TEXT ·dropKeep64AVX512(SB), NOSPLIT, $0-48
	MOVQ         dst+0(FP), DI
	MOVQ         src+8(FP), SI
	MOVQ         words+16(FP), BX
	MOVQ         n+24(FP), CX
	MOVL         thr+32(FP), AX
	VPBROADCASTD AX, Y7
	VBROADCASTSD scale+40(FP), Z6
	SHRQ         $3, CX
	JZ           done64

loop64:
	VMOVDQU32 (BX), Y0
	VPCMPUD   $5, Y7, Y0, K1 // K1 = words ≥ thr
	VMULPD.Z  (SI), Z6, K1, Z1
	VMOVUPD   Z1, (DI)
	ADDQ      $32, BX
	ADDQ      $64, SI
	ADDQ      $64, DI
	DECQ      CX
	JNZ       loop64

done64:
	VZEROUPPER
	RET
