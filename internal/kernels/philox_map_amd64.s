//go:build amd64 && !noasm && !amd64.v3

#include "textflag.h"

// philoxNormal8AVX512 is PhiloxNormal for eight blocks per iteration, one
// block per float64 lane. It repeats, lane by lane, the IEEE operations of
// math.Log's amd64 assembly (frexp by bit masks, the √2/2 test as
// f1 ≤ √2/2, the same multiply and add order) and of math.Sincos for
// arguments in [0, 2π) (octant j, three-part reduction, the two
// polynomials, swap and signs by masks instead of branches), with no
// fused multiply-adds, so each result has the bits the Go code gives.
// Rows of the constant table (R9), see normalConsts.
#define ONE 0(R9)
#define TWO 64(R9)
#define HALF 128(R9)
#define HSQRT2 192(R9)
#define L7 256(R9)
#define L5 320(R9)
#define L3 384(R9)
#define L1 448(R9)
#define L6 512(R9)
#define L4 576(R9)
#define L2 640(R9)
#define LN2LO 704(R9)
#define LN2HI 768(R9)
#define MINUS2 832(R9)
#define TWOPI 896(R9)
#define FOUROVERPI 960(R9)
#define PI4A 1024(R9)
#define PI4B 1088(R9)
#define PI4C 1152(R9)
#define SIN0 1216(R9)
#define SIN1 1280(R9)
#define SIN2 1344(R9)
#define SIN3 1408(R9)
#define SIN4 1472(R9)
#define SIN5 1536(R9)
#define COS0 1600(R9)
#define COS1 1664(R9)
#define COS2 1728(R9)
#define COS3 1792(R9)
#define COS4 1856(R9)
#define COS5 1920(R9)
#define P53 1984(R9)
#define MANT 2048(R9)
#define BIAS 2112(R9)
#define INT1 2176(R9)
#define INT4 2240(R9)
#define INT2 2304(R9)
#define SIGN 2368(R9)
#define EVEN 2432(R9)
#define ODD 2496(R9)
#define ILO 2560(R9)
#define IHI 2624(R9)

// One Horner step p = p·x + c.
#define HORNER(x, c, p) \
	VMULPD x, p, p \
	VADDPD c, p, p

// p = ((((c0·x + c1)·x + c2)·x + c3)·x + c4)·x + c5, math.Sincos's order.
#define POLY6(x, c0, c1, c2, c3, c4, c5, p) \
	VMULPD c0, x, p \
	VADDPD c1, p, p \
	HORNER(x, c2, p) \
	HORNER(x, c3, p) \
	HORNER(x, c4, p) \
	HORNER(x, c5, p)

// log(x) into k from f = f1 − 1 and k, math.Log's tail, with s, s2, s4,
// t1, t2, t for s = f/(2+f), its powers and the two polynomials.
#define LOGTAIL(f, k, s, s2, s4, t1, t2, t) \
	VADDPD TWO, f, s \
	VDIVPD s, f, s \
	VMULPD s, s, s2 \
	VMULPD s2, s2, s4 \
	VMULPD L7, s4, t1 \
	VADDPD L5, t1, t1 \
	HORNER(s4, L3, t1) \
	HORNER(s4, L1, t1) \
	VMULPD t1, s2, t1 \
	VMULPD L6, s4, t2 \
	VADDPD L4, t2, t2 \
	HORNER(s4, L2, t2) \
	VMULPD s4, t2, t2 \
	VADDPD t2, t1, t1 \
	VMULPD HALF, f, t2 \
	VMULPD f, t2, t2 \
	VADDPD t2, t1, t1 \
	VMULPD t1, s, s \
	VMULPD LN2LO, k, t \
	VADDPD t, s, s \
	VSUBPD s, t2, t2 \
	VSUBPD f, t2, t2 \
	VMULPD LN2HI, k, k \
	VSUBPD t2, k, k

// cos into c and sin into s of x (in z, reduced in place) with octant y
// (float), math.Sincos's reduction and polynomials, before the swap and
// signs; zz and t are temporaries, one holds 1.
#define SINCOSTAIL(z, y, zz, c, s, t, one) \
	VMULPD PI4A, y, t \
	VSUBPD t, z, z \
	VMULPD PI4B, y, t \
	VSUBPD t, z, z \
	VMULPD PI4C, y, t \
	VSUBPD t, z, z \
	VMULPD z, z, zz \
	POLY6(zz, COS0, COS1, COS2, COS3, COS4, COS5, t) \
	VMULPD zz, zz, c \
	VMULPD t, c, t \
	VMULPD HALF, zz, c \
	VSUBPD c, one, c \
	VADDPD t, c, c \
	POLY6(zz, SIN0, SIN1, SIN2, SIN3, SIN4, SIN5, s) \
	VMULPD zz, z, t \
	VMULPD s, t, s \
	VADDPD s, z, s

// func philoxNormal8AVX512(dst *float64, blocks *[4]uint32, groups int, mean, std float64, c *[normalConstCount][8]uint64)
TEXT ·philoxNormal8AVX512(SB), NOSPLIT, $0-48
	MOVQ dst+0(FP), DI
	MOVQ blocks+8(FP), SI
	MOVQ groups+16(FP), CX
	VBROADCASTSD mean+24(FP), Z30
	VBROADCASTSD std+32(FP), Z29
	MOVQ c+40(FP), R9
	VMOVUPD ONE, Z31
	VMOVDQU64 EVEN, Z25
	VMOVDQU64 ODD, Z26
	VMOVDQU64 ILO, Z27
	VMOVDQU64 IHI, Z28

loop:
	// u₁ (Z2) and u₂ (Z0): words (0,1) and (2,3) as hi·2³²+lo, >>11, ·2⁻⁵³.
	VMOVDQU64 0(SI), Z0
	VMOVDQU64 64(SI), Z1
	VPROLQ $32, Z0, Z0
	VPROLQ $32, Z1, Z1
	VMOVDQA64 Z0, Z2
	VPERMT2Q Z1, Z25, Z2
	VPERMT2Q Z1, Z26, Z0
	VPSRLQ $11, Z2, Z2
	VPSRLQ $11, Z0, Z0
	VCVTQQ2PD Z2, Z2
	VCVTQQ2PD Z0, Z0
	VMULPD P53, Z2, Z2
	VMULPD P53, Z0, Z0

	// log(x), x = 1 − u₁ (Z3), into Z5.
	VSUBPD Z2, Z31, Z3
	VPANDQ MANT, Z3, Z4
	VPORQ HALF, Z4, Z4     // f1
	VPSRLQ $52, Z3, Z5
	VPSUBQ BIAS, Z5, Z5
	VCVTQQ2PD Z5, Z5       // k
	VCMPPD $2, HSQRT2, Z4, K1
	VSUBPD Z31, Z5, K1, Z5 // k −= 1 where f1 ≤ √2/2
	VADDPD Z4, Z4, K1, Z4  // f1 ·= 2 there
	VSUBPD Z31, Z4, Z4     // f
	LOGTAIL(Z4, Z5, Z6, Z7, Z8, Z9, Z10, Z11)
	VMULPD MINUS2, Z5, Z5
	VSQRTPD Z5, Z5         // r

	// sincos(2π·u₂): octant j (Z1), reduced z (Z0).
	VMULPD TWOPI, Z0, Z0
	VMULPD FOUROVERPI, Z0, Z1
	VCVTTPD2QQ Z1, Z1
	VPANDQ INT1, Z1, Z2
	VPADDQ Z2, Z1, Z1      // j rounded up to even
	VCVTQQ2PD Z1, Z2       // y
	VPTESTMQ INT4, Z1, K2  // j&4: both signs flip
	VPTESTMQ INT2, Z1, K3  // j&2: swap, cos sign flips
	SINCOSTAIL(Z0, Z2, Z4, Z8, Z9, Z3, Z31)
	VBLENDMPD Z9, Z8, K3, Z10 // cos after the swap
	VBLENDMPD Z8, Z9, K3, Z11 // sin after the swap
	KXORB K2, K3, K4
	VXORPD SIGN, Z10, K4, Z10
	VXORPD SIGN, Z11, K2, Z11

	// mean + std·r·cos, mean + std·r·sin, interleaved.
	VMULPD Z5, Z29, Z5
	VMULPD Z10, Z5, Z10
	VMULPD Z11, Z5, Z11
	VADDPD Z10, Z30, Z10
	VADDPD Z11, Z30, Z11
	VMOVDQA64 Z10, Z12
	VPERMT2Q Z11, Z27, Z12
	VPERMT2Q Z11, Z28, Z10
	VMOVDQU64 Z12, 0(DI)
	VMOVDQU64 Z10, 64(DI)
	ADDQ $128, SI
	ADDQ $128, DI
	DECQ CX
	JNZ loop
	VZEROUPPER
	RET

// The AVX2 path: four blocks per iteration, one per ymm lane, the same
// operations as above. AVX2 lacks the qword conversions, masks and VPROLQ:
// integers below 2⁵³ become float64 exactly through 2⁵² (TWO52), masks
// are lanes of ones (VCMPPD, VPCMPEQQ) applied by VBLENDVPD and VANDPD, and
// the word swap is VPSHUFD.
#define TWO52 2688(R9)
#define F1022 2752(R9)

// m (an integer below 2⁵³ in each qword) = float64(m), with t and h:
// its low 52 bits through 2⁵², plus 2⁵² where bit 52 is set; exact.
#define U53TOF(m, t, h) \
	VPAND MANT, m, t \
	VPOR TWO52, t, t \
	VSUBPD TWO52, t, t \
	VPSRLQ $52, m, h \
	VPCMPEQQ INT1, h, h \
	VPAND TWO52, h, h \
	VADDPD h, t, m

// func philoxNormal4AVX2(dst *float64, blocks *[4]uint32, groups int, mean, std float64, c *[normalConstCount][8]uint64)
TEXT ·philoxNormal4AVX2(SB), NOSPLIT, $0-48
	MOVQ dst+0(FP), DI
	MOVQ blocks+8(FP), SI
	MOVQ groups+16(FP), CX
	VBROADCASTSD mean+24(FP), Y14
	VBROADCASTSD std+32(FP), Y13
	MOVQ c+40(FP), R9
	VMOVUPD ONE, Y15

loop4:
	// u₁ (Y2) and u₂ (Y0).
	VMOVDQU 0(SI), Y0
	VMOVDQU 32(SI), Y1
	VPSHUFD $0xB1, Y0, Y0
	VPSHUFD $0xB1, Y1, Y1
	VPUNPCKLQDQ Y1, Y0, Y2
	VPUNPCKHQDQ Y1, Y0, Y0
	VPERMQ $0xD8, Y2, Y2
	VPERMQ $0xD8, Y0, Y0
	VPSRLQ $11, Y2, Y2
	VPSRLQ $11, Y0, Y0
	U53TOF(Y2, Y3, Y4)
	U53TOF(Y0, Y3, Y4)
	VMULPD P53, Y2, Y2
	VMULPD P53, Y0, Y0

	// log(1 − u₁) into Y5, then r.
	VSUBPD Y2, Y15, Y3
	VPAND MANT, Y3, Y4
	VPOR HALF, Y4, Y4      // f1
	VPSRLQ $52, Y3, Y5
	VPOR TWO52, Y5, Y5
	VSUBPD TWO52, Y5, Y5
	VSUBPD F1022, Y5, Y5   // k
	VCMPPD $2, HSQRT2, Y4, Y6
	VANDPD Y15, Y6, Y7
	VSUBPD Y7, Y5, Y5      // k −= 1 where f1 ≤ √2/2
	VADDPD Y4, Y4, Y7
	VBLENDVPD Y6, Y7, Y4, Y4 // f1 ·= 2 there
	VSUBPD Y15, Y4, Y4     // f
	LOGTAIL(Y4, Y5, Y6, Y7, Y8, Y9, Y10, Y11)
	VMULPD MINUS2, Y5, Y5
	VSQRTPD Y5, Y5         // r

	// sincos(2π·u₂): octant masks Y3 (j&4) and Y1 (j&2), z in Y0.
	VMULPD TWOPI, Y0, Y0
	VMULPD FOUROVERPI, Y0, Y1
	VCVTTPD2DQY Y1, X1
	VPMOVSXDQ X1, Y1
	VPAND INT1, Y1, Y2
	VPADDQ Y2, Y1, Y1
	VPOR TWO52, Y1, Y2
	VSUBPD TWO52, Y2, Y2   // y
	VPAND INT4, Y1, Y3
	VPCMPEQQ INT4, Y3, Y3
	VPAND INT2, Y1, Y1
	VPCMPEQQ INT2, Y1, Y1
	SINCOSTAIL(Y0, Y2, Y4, Y8, Y9, Y6, Y15)
	VBLENDVPD Y1, Y9, Y8, Y10 // cos after the swap
	VBLENDVPD Y1, Y8, Y9, Y11 // sin after the swap
	VPXOR Y1, Y3, Y1
	VANDPD SIGN, Y1, Y1
	VXORPD Y1, Y10, Y10
	VANDPD SIGN, Y3, Y3
	VXORPD Y3, Y11, Y11

	// mean + std·r·cos, mean + std·r·sin, interleaved.
	VMULPD Y5, Y13, Y5
	VMULPD Y10, Y5, Y10
	VMULPD Y11, Y5, Y11
	VADDPD Y10, Y14, Y10
	VADDPD Y11, Y14, Y11
	VPUNPCKLQDQ Y11, Y10, Y0
	VPUNPCKHQDQ Y11, Y10, Y1
	VPERM2I128 $0x20, Y1, Y0, Y2
	VPERM2I128 $0x31, Y1, Y0, Y3
	VMOVDQU Y2, 0(DI)
	VMOVDQU Y3, 32(DI)
	ADDQ $64, SI
	ADDQ $64, DI
	DECQ CX
	JNZ loop4
	VZEROUPPER
	RET
