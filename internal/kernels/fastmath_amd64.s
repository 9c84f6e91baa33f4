//go:build amd64 && !noasm

#include "textflag.h"

// The AVX2 twins of fastmath.go's exp32, tanh32, sigmoid32, geluTanh32 and
// geluTanhDeriv32: the same float32 operations in the same order, no FMA,
// so that every lane gets the Go function's bits.

// The constants, each repeated in 8 lanes (32 bytes), as fastmath.go's:
// C_HI     0x42b20000  89
// C_LO     0xc2d00000  -104
// C_LOG2E  0x3fb8aa3b  log2 e
// C_MAGIC  0x4b400000  1.5·2^23
// C_C1     0x3f318000  0.693359375
// C_C2     0xb95e8083  ln 2 − C1
// C_P0     0x3efffffd  P(r) coefficients
// C_P1     0x3e2aaa39
// C_P2     0x3d2aacc4
// C_P3     0x3c092899
// C_P4     0x3ab4fecf
// C_ONE    0x3f800000  1
// C_BIAS   0x0000007f  127 (int32)
// C_ABS    0x7fffffff  clears the sign
// C_SIGN   0x80000000  the sign bit
// C_CUT    0x3f200000  0.625
// C_Q0     0xbeaaaa99  Q(x²) coefficients
// C_Q1     0x3e088393
// C_Q2     0xbd5c1e2d
// C_Q3     0x3ca9134c
// C_Q4     0xbbbaf0e0
// C_M2     0xc0000000  -2
// C_A0     0x3fcc422a  2·√(2/π)
// C_A1     0x3d922279  2·√(2/π)·0.044715
// C_A1X3   0x3e5b33b6  3·C_A1
// C_MAX    0x7f7fffff  MaxFloat32
// C_NEGINF 0xff800000  −Inf
#define C_HI fmc<>+0(SB)
#define C_LO fmc<>+32(SB)
#define C_LOG2E fmc<>+64(SB)
#define C_MAGIC fmc<>+96(SB)
#define C_C1 fmc<>+128(SB)
#define C_C2 fmc<>+160(SB)
#define C_P0 fmc<>+192(SB)
#define C_P1 fmc<>+224(SB)
#define C_P2 fmc<>+256(SB)
#define C_P3 fmc<>+288(SB)
#define C_P4 fmc<>+320(SB)
#define C_ONE fmc<>+352(SB)
#define C_BIAS fmc<>+384(SB)
#define C_ABS fmc<>+416(SB)
#define C_SIGN fmc<>+448(SB)
#define C_CUT fmc<>+480(SB)
#define C_Q0 fmc<>+512(SB)
#define C_Q1 fmc<>+544(SB)
#define C_Q2 fmc<>+576(SB)
#define C_Q3 fmc<>+608(SB)
#define C_Q4 fmc<>+640(SB)
#define C_M2 fmc<>+672(SB)
#define C_A0 fmc<>+704(SB)
#define C_A1 fmc<>+736(SB)
#define C_A1X3 fmc<>+768(SB)
#define C_MAX fmc<>+800(SB)
#define C_NEGINF fmc<>+832(SB)

DATA fmc<>+0(SB)/4, $0x42b20000
DATA fmc<>+4(SB)/4, $0x42b20000
DATA fmc<>+8(SB)/4, $0x42b20000
DATA fmc<>+12(SB)/4, $0x42b20000
DATA fmc<>+16(SB)/4, $0x42b20000
DATA fmc<>+20(SB)/4, $0x42b20000
DATA fmc<>+24(SB)/4, $0x42b20000
DATA fmc<>+28(SB)/4, $0x42b20000
DATA fmc<>+32(SB)/4, $0xc2d00000
DATA fmc<>+36(SB)/4, $0xc2d00000
DATA fmc<>+40(SB)/4, $0xc2d00000
DATA fmc<>+44(SB)/4, $0xc2d00000
DATA fmc<>+48(SB)/4, $0xc2d00000
DATA fmc<>+52(SB)/4, $0xc2d00000
DATA fmc<>+56(SB)/4, $0xc2d00000
DATA fmc<>+60(SB)/4, $0xc2d00000
DATA fmc<>+64(SB)/4, $0x3fb8aa3b
DATA fmc<>+68(SB)/4, $0x3fb8aa3b
DATA fmc<>+72(SB)/4, $0x3fb8aa3b
DATA fmc<>+76(SB)/4, $0x3fb8aa3b
DATA fmc<>+80(SB)/4, $0x3fb8aa3b
DATA fmc<>+84(SB)/4, $0x3fb8aa3b
DATA fmc<>+88(SB)/4, $0x3fb8aa3b
DATA fmc<>+92(SB)/4, $0x3fb8aa3b
DATA fmc<>+96(SB)/4, $0x4b400000
DATA fmc<>+100(SB)/4, $0x4b400000
DATA fmc<>+104(SB)/4, $0x4b400000
DATA fmc<>+108(SB)/4, $0x4b400000
DATA fmc<>+112(SB)/4, $0x4b400000
DATA fmc<>+116(SB)/4, $0x4b400000
DATA fmc<>+120(SB)/4, $0x4b400000
DATA fmc<>+124(SB)/4, $0x4b400000
DATA fmc<>+128(SB)/4, $0x3f318000
DATA fmc<>+132(SB)/4, $0x3f318000
DATA fmc<>+136(SB)/4, $0x3f318000
DATA fmc<>+140(SB)/4, $0x3f318000
DATA fmc<>+144(SB)/4, $0x3f318000
DATA fmc<>+148(SB)/4, $0x3f318000
DATA fmc<>+152(SB)/4, $0x3f318000
DATA fmc<>+156(SB)/4, $0x3f318000
DATA fmc<>+160(SB)/4, $0xb95e8083
DATA fmc<>+164(SB)/4, $0xb95e8083
DATA fmc<>+168(SB)/4, $0xb95e8083
DATA fmc<>+172(SB)/4, $0xb95e8083
DATA fmc<>+176(SB)/4, $0xb95e8083
DATA fmc<>+180(SB)/4, $0xb95e8083
DATA fmc<>+184(SB)/4, $0xb95e8083
DATA fmc<>+188(SB)/4, $0xb95e8083
DATA fmc<>+192(SB)/4, $0x3efffffd
DATA fmc<>+196(SB)/4, $0x3efffffd
DATA fmc<>+200(SB)/4, $0x3efffffd
DATA fmc<>+204(SB)/4, $0x3efffffd
DATA fmc<>+208(SB)/4, $0x3efffffd
DATA fmc<>+212(SB)/4, $0x3efffffd
DATA fmc<>+216(SB)/4, $0x3efffffd
DATA fmc<>+220(SB)/4, $0x3efffffd
DATA fmc<>+224(SB)/4, $0x3e2aaa39
DATA fmc<>+228(SB)/4, $0x3e2aaa39
DATA fmc<>+232(SB)/4, $0x3e2aaa39
DATA fmc<>+236(SB)/4, $0x3e2aaa39
DATA fmc<>+240(SB)/4, $0x3e2aaa39
DATA fmc<>+244(SB)/4, $0x3e2aaa39
DATA fmc<>+248(SB)/4, $0x3e2aaa39
DATA fmc<>+252(SB)/4, $0x3e2aaa39
DATA fmc<>+256(SB)/4, $0x3d2aacc4
DATA fmc<>+260(SB)/4, $0x3d2aacc4
DATA fmc<>+264(SB)/4, $0x3d2aacc4
DATA fmc<>+268(SB)/4, $0x3d2aacc4
DATA fmc<>+272(SB)/4, $0x3d2aacc4
DATA fmc<>+276(SB)/4, $0x3d2aacc4
DATA fmc<>+280(SB)/4, $0x3d2aacc4
DATA fmc<>+284(SB)/4, $0x3d2aacc4
DATA fmc<>+288(SB)/4, $0x3c092899
DATA fmc<>+292(SB)/4, $0x3c092899
DATA fmc<>+296(SB)/4, $0x3c092899
DATA fmc<>+300(SB)/4, $0x3c092899
DATA fmc<>+304(SB)/4, $0x3c092899
DATA fmc<>+308(SB)/4, $0x3c092899
DATA fmc<>+312(SB)/4, $0x3c092899
DATA fmc<>+316(SB)/4, $0x3c092899
DATA fmc<>+320(SB)/4, $0x3ab4fecf
DATA fmc<>+324(SB)/4, $0x3ab4fecf
DATA fmc<>+328(SB)/4, $0x3ab4fecf
DATA fmc<>+332(SB)/4, $0x3ab4fecf
DATA fmc<>+336(SB)/4, $0x3ab4fecf
DATA fmc<>+340(SB)/4, $0x3ab4fecf
DATA fmc<>+344(SB)/4, $0x3ab4fecf
DATA fmc<>+348(SB)/4, $0x3ab4fecf
DATA fmc<>+352(SB)/4, $0x3f800000
DATA fmc<>+356(SB)/4, $0x3f800000
DATA fmc<>+360(SB)/4, $0x3f800000
DATA fmc<>+364(SB)/4, $0x3f800000
DATA fmc<>+368(SB)/4, $0x3f800000
DATA fmc<>+372(SB)/4, $0x3f800000
DATA fmc<>+376(SB)/4, $0x3f800000
DATA fmc<>+380(SB)/4, $0x3f800000
DATA fmc<>+384(SB)/4, $0x0000007f
DATA fmc<>+388(SB)/4, $0x0000007f
DATA fmc<>+392(SB)/4, $0x0000007f
DATA fmc<>+396(SB)/4, $0x0000007f
DATA fmc<>+400(SB)/4, $0x0000007f
DATA fmc<>+404(SB)/4, $0x0000007f
DATA fmc<>+408(SB)/4, $0x0000007f
DATA fmc<>+412(SB)/4, $0x0000007f
DATA fmc<>+416(SB)/4, $0x7fffffff
DATA fmc<>+420(SB)/4, $0x7fffffff
DATA fmc<>+424(SB)/4, $0x7fffffff
DATA fmc<>+428(SB)/4, $0x7fffffff
DATA fmc<>+432(SB)/4, $0x7fffffff
DATA fmc<>+436(SB)/4, $0x7fffffff
DATA fmc<>+440(SB)/4, $0x7fffffff
DATA fmc<>+444(SB)/4, $0x7fffffff
DATA fmc<>+448(SB)/4, $0x80000000
DATA fmc<>+452(SB)/4, $0x80000000
DATA fmc<>+456(SB)/4, $0x80000000
DATA fmc<>+460(SB)/4, $0x80000000
DATA fmc<>+464(SB)/4, $0x80000000
DATA fmc<>+468(SB)/4, $0x80000000
DATA fmc<>+472(SB)/4, $0x80000000
DATA fmc<>+476(SB)/4, $0x80000000
DATA fmc<>+480(SB)/4, $0x3f200000
DATA fmc<>+484(SB)/4, $0x3f200000
DATA fmc<>+488(SB)/4, $0x3f200000
DATA fmc<>+492(SB)/4, $0x3f200000
DATA fmc<>+496(SB)/4, $0x3f200000
DATA fmc<>+500(SB)/4, $0x3f200000
DATA fmc<>+504(SB)/4, $0x3f200000
DATA fmc<>+508(SB)/4, $0x3f200000
DATA fmc<>+512(SB)/4, $0xbeaaaa99
DATA fmc<>+516(SB)/4, $0xbeaaaa99
DATA fmc<>+520(SB)/4, $0xbeaaaa99
DATA fmc<>+524(SB)/4, $0xbeaaaa99
DATA fmc<>+528(SB)/4, $0xbeaaaa99
DATA fmc<>+532(SB)/4, $0xbeaaaa99
DATA fmc<>+536(SB)/4, $0xbeaaaa99
DATA fmc<>+540(SB)/4, $0xbeaaaa99
DATA fmc<>+544(SB)/4, $0x3e088393
DATA fmc<>+548(SB)/4, $0x3e088393
DATA fmc<>+552(SB)/4, $0x3e088393
DATA fmc<>+556(SB)/4, $0x3e088393
DATA fmc<>+560(SB)/4, $0x3e088393
DATA fmc<>+564(SB)/4, $0x3e088393
DATA fmc<>+568(SB)/4, $0x3e088393
DATA fmc<>+572(SB)/4, $0x3e088393
DATA fmc<>+576(SB)/4, $0xbd5c1e2d
DATA fmc<>+580(SB)/4, $0xbd5c1e2d
DATA fmc<>+584(SB)/4, $0xbd5c1e2d
DATA fmc<>+588(SB)/4, $0xbd5c1e2d
DATA fmc<>+592(SB)/4, $0xbd5c1e2d
DATA fmc<>+596(SB)/4, $0xbd5c1e2d
DATA fmc<>+600(SB)/4, $0xbd5c1e2d
DATA fmc<>+604(SB)/4, $0xbd5c1e2d
DATA fmc<>+608(SB)/4, $0x3ca9134c
DATA fmc<>+612(SB)/4, $0x3ca9134c
DATA fmc<>+616(SB)/4, $0x3ca9134c
DATA fmc<>+620(SB)/4, $0x3ca9134c
DATA fmc<>+624(SB)/4, $0x3ca9134c
DATA fmc<>+628(SB)/4, $0x3ca9134c
DATA fmc<>+632(SB)/4, $0x3ca9134c
DATA fmc<>+636(SB)/4, $0x3ca9134c
DATA fmc<>+640(SB)/4, $0xbbbaf0e0
DATA fmc<>+644(SB)/4, $0xbbbaf0e0
DATA fmc<>+648(SB)/4, $0xbbbaf0e0
DATA fmc<>+652(SB)/4, $0xbbbaf0e0
DATA fmc<>+656(SB)/4, $0xbbbaf0e0
DATA fmc<>+660(SB)/4, $0xbbbaf0e0
DATA fmc<>+664(SB)/4, $0xbbbaf0e0
DATA fmc<>+668(SB)/4, $0xbbbaf0e0
DATA fmc<>+672(SB)/4, $0xc0000000
DATA fmc<>+676(SB)/4, $0xc0000000
DATA fmc<>+680(SB)/4, $0xc0000000
DATA fmc<>+684(SB)/4, $0xc0000000
DATA fmc<>+688(SB)/4, $0xc0000000
DATA fmc<>+692(SB)/4, $0xc0000000
DATA fmc<>+696(SB)/4, $0xc0000000
DATA fmc<>+700(SB)/4, $0xc0000000
DATA fmc<>+704(SB)/4, $0x3fcc422a
DATA fmc<>+708(SB)/4, $0x3fcc422a
DATA fmc<>+712(SB)/4, $0x3fcc422a
DATA fmc<>+716(SB)/4, $0x3fcc422a
DATA fmc<>+720(SB)/4, $0x3fcc422a
DATA fmc<>+724(SB)/4, $0x3fcc422a
DATA fmc<>+728(SB)/4, $0x3fcc422a
DATA fmc<>+732(SB)/4, $0x3fcc422a
DATA fmc<>+736(SB)/4, $0x3d922279
DATA fmc<>+740(SB)/4, $0x3d922279
DATA fmc<>+744(SB)/4, $0x3d922279
DATA fmc<>+748(SB)/4, $0x3d922279
DATA fmc<>+752(SB)/4, $0x3d922279
DATA fmc<>+756(SB)/4, $0x3d922279
DATA fmc<>+760(SB)/4, $0x3d922279
DATA fmc<>+764(SB)/4, $0x3d922279
DATA fmc<>+768(SB)/4, $0x3e5b33b6
DATA fmc<>+772(SB)/4, $0x3e5b33b6
DATA fmc<>+776(SB)/4, $0x3e5b33b6
DATA fmc<>+780(SB)/4, $0x3e5b33b6
DATA fmc<>+784(SB)/4, $0x3e5b33b6
DATA fmc<>+788(SB)/4, $0x3e5b33b6
DATA fmc<>+792(SB)/4, $0x3e5b33b6
DATA fmc<>+796(SB)/4, $0x3e5b33b6
DATA fmc<>+800(SB)/4, $0x7f7fffff
DATA fmc<>+804(SB)/4, $0x7f7fffff
DATA fmc<>+808(SB)/4, $0x7f7fffff
DATA fmc<>+812(SB)/4, $0x7f7fffff
DATA fmc<>+816(SB)/4, $0x7f7fffff
DATA fmc<>+820(SB)/4, $0x7f7fffff
DATA fmc<>+824(SB)/4, $0x7f7fffff
DATA fmc<>+828(SB)/4, $0x7f7fffff
DATA fmc<>+832(SB)/4, $0xff800000
DATA fmc<>+836(SB)/4, $0xff800000
DATA fmc<>+840(SB)/4, $0xff800000
DATA fmc<>+844(SB)/4, $0xff800000
DATA fmc<>+848(SB)/4, $0xff800000
DATA fmc<>+852(SB)/4, $0xff800000
DATA fmc<>+856(SB)/4, $0xff800000
DATA fmc<>+860(SB)/4, $0xff800000
GLOBL fmc<>(SB), RODATA|NOPTR, $864

// SUMPD adds the eight floats of y (x is its low half), widened to
// float64, into the running sums Y13 (lanes 0-3) and Y14 (lanes 4-7);
// Y10 and Y11 are scratch.
#define SUMPD(y, x) \
	VCVTPS2PD    x, Y10       \
	VEXTRACTF128 $1, y, X11   \
	VCVTPS2PD    X11, Y11     \
	VADDPD       Y10, Y13, Y13 \
	VADDPD       Y11, Y14, Y14

// EXPF sets y = exp32(x) for 8 lanes, using n, t, u and m as scratch; x is
// left unchanged. The operations and their order are exp32's. Lanes below
// C_LO are set to 0 by a mask rather than computed: their arithmetic would
// underflow, and a multiply with a subnormal or underflowing result is
// several times slower than a normal one.
#define EXPF(x, y, n, t, u, m) \
	VCMPPS    $1, C_LO, x, m \
	VMINPS    C_HI, x, y    \
	VANDNPS   y, m, y       \
	VMULPS    C_LOG2E, y, n \
	VADDPS    C_MAGIC, n, n \
	VSUBPS    C_MAGIC, n, t \
	VPSUBD    C_MAGIC, n, n \
	VMULPS    C_C1, t, u    \
	VSUBPS    u, y, y       \
	VMULPS    C_C2, t, u    \
	VSUBPS    u, y, y       \
	VMULPS    y, y, t       \
	VMULPS    C_P4, y, u    \
	VADDPS    C_P3, u, u    \
	VMULPS    y, u, u       \
	VADDPS    C_P2, u, u    \
	VMULPS    y, u, u       \
	VADDPS    C_P1, u, u    \
	VMULPS    y, u, u       \
	VADDPS    C_P0, u, u    \
	VMULPS    t, u, u       \
	VADDPS    y, u, u       \
	VADDPS    C_ONE, u, u   \
	VPSRAD    $1, n, t      \
	VPSUBD    t, n, n       \
	VPADDD    C_BIAS, t, t  \
	VPSLLD    $23, t, t     \
	VPADDD    C_BIAS, n, n  \
	VPSLLD    $23, n, n     \
	VMULPS    t, u, u       \
	VMULPS    n, u, u       \
	VANDNPS   u, m, u       \
	VCMPPS    $3, x, x, t   \
	VBLENDVPS t, x, u, y

// TANH sets r = tanh32(x), with a, m, e, t0, t1, t2 as scratch (r may be
// t0).
#define TANH(x, r, a, m, e, t0, t1, t2) \
	VANDPS    C_ABS, x, a       \
	VMULPS    C_M2, a, a        \
	EXPF(a, e, t0, t1, t2, m)   \
	VMOVUPS   C_ONE, t0         \
	VSUBPS    e, t0, t0         \
	VADDPS    C_ONE, e, e       \
	VDIVPS    e, t0, t0         \
	VANDPS    C_SIGN, x, t1     \
	VORPS     t1, t0, t0        \
	VMULPS    x, x, t1          \
	VMULPS    C_Q4, t1, t2      \
	VADDPS    C_Q3, t2, t2      \
	VMULPS    t1, t2, t2        \
	VADDPS    C_Q2, t2, t2      \
	VMULPS    t1, t2, t2        \
	VADDPS    C_Q1, t2, t2      \
	VMULPS    t1, t2, t2        \
	VADDPS    C_Q0, t2, t2      \
	VMULPS    t2, t1, t2        \
	VMULPS    x, t2, t2         \
	VADDPS    x, t2, t2         \
	VANDPS    C_ABS, x, t1      \
	VCMPPS    $1, C_CUT, t1, m  \
	VBLENDVPS m, t2, t0, r

// SIGM sets r = sigmoid32(x), with a, e, t0, t1, m as scratch.
#define SIGM(x, r, a, e, t0, t1, m) \
	VORPS     C_SIGN, x, a      \
	EXPF(a, e, t0, t1, r, m)    \
	VMOVUPS   C_ONE, t1         \
	VADDPS    t1, e, t0         \
	VBLENDVPS x, e, t1, t1      \
	VDIVPS    t0, t1, r

// GELUW sets w = (A1·x² + A0)·x and x2 = x².
#define GELUW(x, w, x2) \
	VMULPS    x, x, x2     \
	VMULPS    C_A1, x2, w  \
	VADDPS    C_A0, w, w   \
	VMULPS    x, w, w

// GELU sets r = geluTanh32(x), with w, x2, a, e, t0, m as scratch.
#define GELU(x, r, w, x2, a, e, t0, m) \
	GELUW(x, w, x2)              \
	SIGM(w, r, a, e, t0, x2, m)  \
	VMULPS    r, x, r

// GELUD sets x = dy·geluTanhDeriv32(x) with dy at mem, with x2, w, a, e,
// t0, t1, t2 as scratch (x2 serves EXPF and is computed again after).
#define GELUD(x, mem, x2, w, a, e, t0, t1, t2) \
	GELUW(x, w, x2)              \
	VORPS     C_SIGN, w, a       \
	EXPF(a, e, t0, t1, t2, x2)   \
	VADDPS    C_ONE, e, t0       \
	VMOVUPS   C_ONE, t1          \
	VDIVPS    t0, t1, t1         \
	VMULPS    t1, e, t0          \
	VBLENDVPS w, t0, t1, a       \
	VBLENDVPS w, t1, t0, e       \
	VMULPS    x, x, x2           \
	VMULPS    C_A1X3, x2, x2     \
	VADDPS    C_A0, x2, x2       \
	VMINPS    C_MAX, x2, x2      \
	VMULPS    a, x, t2           \
	VMULPS    e, t2, t2          \
	VMULPS    x2, t2, t2         \
	VADDPS    t2, a, x           \
	VMULPS    mem, x, x

// func expShiftF32(d, s *float32, n int, shift float32, acc *[8]float64)
// d = exp32(s − shift); acc[i mod 8] += d[i] in float64.
TEXT ·expShiftF32(SB), NOSPLIT, $0-40
	MOVQ         d+0(FP), DI
	MOVQ         s+8(FP), SI
	MOVQ         n+16(FP), CX
	VBROADCASTSS shift+24(FP), Y15
	MOVQ         acc+32(FP), DX
	VMOVUPD      (DX), Y13
	VMOVUPD      32(DX), Y14
	CMPQ         CX, $16
	JB           exptail

exploop16:
	VMOVUPS      (SI), Y0
	VMOVUPS      32(SI), Y5
	VSUBPS       Y15, Y0, Y0
	VSUBPS       Y15, Y5, Y5
	EXPF(Y0, Y1, Y2, Y3, Y4, Y10)
	EXPF(Y5, Y6, Y7, Y8, Y9, Y11)
	VMOVUPS      Y1, (DI)
	VMOVUPS      Y6, 32(DI)
	SUMPD(Y1, X1)
	SUMPD(Y6, X6)
	ADDQ         $64, SI
	ADDQ         $64, DI
	SUBQ         $16, CX
	CMPQ         CX, $16
	JAE          exploop16

exptail:
	TESTQ        CX, CX
	JZ           expdone
	VMOVUPS      (SI), Y0
	VSUBPS       Y15, Y0, Y0
	EXPF(Y0, Y1, Y2, Y3, Y4, Y10)
	VMOVUPS      Y1, (DI)
	SUMPD(Y1, X1)

expdone:
	VMOVUPD      Y13, (DX)
	VMOVUPD      Y14, 32(DX)
	VZEROUPPER
	RET

// UNARY defines func name(d, s *float32, n int): d = F(s), 16 elements per
// iteration, then 8 (n is a positive multiple of 8).
#define UNARY(name, F1, F2) \
TEXT name(SB), NOSPLIT, $0-24 \
	MOVQ    d+0(FP), DI  \
	MOVQ    s+8(FP), SI  \
	MOVQ    n+16(FP), CX \
	CMPQ    CX, $16      \
	JB      tail         \
loop16:                  \
	VMOVUPS (SI), Y0     \
	VMOVUPS 32(SI), Y8   \
	F1                   \
	F2                   \
	VMOVUPS Y1, (DI)     \
	VMOVUPS Y9, 32(DI)   \
	ADDQ    $64, SI      \
	ADDQ    $64, DI      \
	SUBQ    $16, CX      \
	CMPQ    CX, $16      \
	JAE     loop16       \
tail:                    \
	TESTQ   CX, CX       \
	JZ      done         \
	VMOVUPS (SI), Y0     \
	F1                   \
	VMOVUPS Y1, (DI)     \
done:                    \
	VZEROUPPER           \
	RET

UNARY(·tanhF32, TANH(Y0, Y1, Y2, Y3, Y4, Y5, Y6, Y7), TANH(Y8, Y9, Y10, Y11, Y12, Y13, Y14, Y15))
UNARY(·sigmoidF32, SIGM(Y0, Y1, Y2, Y3, Y4, Y5, Y6), SIGM(Y8, Y9, Y10, Y11, Y12, Y13, Y14))
UNARY(·geluTanhF32, GELU(Y0, Y1, Y2, Y3, Y4, Y5, Y6, Y7), GELU(Y8, Y9, Y10, Y11, Y12, Y13, Y14, Y15))

// func geluTanhGradF32(dx, dy, x *float32, n int)
// dx = dy·geluTanhDeriv32(x), n a positive multiple of 8.
TEXT ·geluTanhGradF32(SB), NOSPLIT, $0-32
	MOVQ    dx+0(FP), DI
	MOVQ    dy+8(FP), DX
	MOVQ    x+16(FP), SI
	MOVQ    n+24(FP), CX
	CMPQ    CX, $16
	JB      gtail

gloop16:
	VMOVUPS (SI), Y0
	VMOVUPS 32(SI), Y8
	GELUD(Y0, (DX), Y1, Y2, Y3, Y4, Y5, Y6, Y7)
	GELUD(Y8, 32(DX), Y9, Y10, Y11, Y12, Y13, Y14, Y15)
	VMOVUPS Y0, (DI)
	VMOVUPS Y8, 32(DI)
	ADDQ    $64, SI
	ADDQ    $64, DX
	ADDQ    $64, DI
	SUBQ    $16, CX
	CMPQ    CX, $16
	JAE     gloop16

gtail:
	TESTQ   CX, CX
	JZ      gdone
	VMOVUPS (SI), Y0
	GELUD(Y0, (DX), Y1, Y2, Y3, Y4, Y5, Y6, Y7)
	VMOVUPS Y0, (DI)

gdone:
	VZEROUPPER
	RET

// func expRowsF32(s *float32, ld, rows int, lens *int, shift *float32, sums *float64)
// For each row r < rows (ld floats apart): row[:lens[r]] =
// exp32(row[:lens[r]] − shift[r]) in place, lens[r] a multiple of 8 (0
// allowed), and sums[r] = ((a0+a4)+(a2+a6)) + ((a1+a5)+(a3+a7)) where a_l
// is the float64 running sum of row[i] over i ≡ l (mod 8).
TEXT ·expRowsF32(SB), NOSPLIT, $0-48
	MOVQ         s+0(FP), DI
	MOVQ         ld+8(FP), R8
	MOVQ         rows+16(FP), R9
	MOVQ         lens+24(FP), R10
	MOVQ         shift+32(FP), R11
	MOVQ         sums+40(FP), DX
	SHLQ         $2, R8

errow:
	TESTQ        R9, R9
	JZ           erdone
	MOVQ         (R10), CX
	VBROADCASTSS (R11), Y15
	VXORPD       Y13, Y13, Y13
	VXORPD       Y14, Y14, Y14
	MOVQ         DI, SI
	CMPQ         CX, $16
	JB           ertail

erloop16:
	VMOVUPS      (SI), Y0
	VMOVUPS      32(SI), Y5
	VSUBPS       Y15, Y0, Y0
	VSUBPS       Y15, Y5, Y5
	EXPF(Y0, Y1, Y2, Y3, Y4, Y10)
	EXPF(Y5, Y6, Y7, Y8, Y9, Y11)
	VMOVUPS      Y1, (SI)
	VMOVUPS      Y6, 32(SI)
	SUMPD(Y1, X1)
	SUMPD(Y6, X6)
	ADDQ         $64, SI
	SUBQ         $16, CX
	CMPQ         CX, $16
	JAE          erloop16

ertail:
	TESTQ        CX, CX
	JZ           erstore
	VMOVUPS      (SI), Y0
	VSUBPS       Y15, Y0, Y0
	EXPF(Y0, Y1, Y2, Y3, Y4, Y10)
	VMOVUPS      Y1, (SI)
	SUMPD(Y1, X1)

erstore:
	VADDPD       Y14, Y13, Y13
	VEXTRACTF128 $1, Y13, X14
	VADDPD       X14, X13, X13
	VPERMILPD    $1, X13, X14
	VADDSD       X14, X13, X13
	VMOVSD       X13, (DX)
	ADDQ         R8, DI
	ADDQ         $8, R10
	ADDQ         $4, R11
	ADDQ         $8, DX
	DECQ         R9
	JMP          errow

erdone:
	VZEROUPPER
	RET

// func maxRowsF32(s *float32, ld, rows int, lens *int, out *float32)
// out[r] = the largest of row r's first lens[r] elements (a multiple of 8;
// −Inf when 0), rows ld floats apart. A NaN element may or may not be
// returned (VMAXPS returns its second operand when either is NaN).
TEXT ·maxRowsF32(SB), NOSPLIT, $0-40
	MOVQ         s+0(FP), DI
	MOVQ         ld+8(FP), R8
	MOVQ         rows+16(FP), R9
	MOVQ         lens+24(FP), R10
	MOVQ         out+32(FP), DX
	SHLQ         $2, R8
	VBROADCASTSS C_NEGINF, Y15

mrrow:
	TESTQ        R9, R9
	JZ           mrdone
	MOVQ         (R10), CX
	MOVQ         DI, SI
	VMOVAPS      Y15, Y0
	VMOVAPS      Y15, Y1
	CMPQ         CX, $16
	JB           mrtail

mrloop16:
	VMAXPS       (SI), Y0, Y0
	VMAXPS       32(SI), Y1, Y1
	ADDQ         $64, SI
	SUBQ         $16, CX
	CMPQ         CX, $16
	JAE          mrloop16

mrtail:
	TESTQ        CX, CX
	JZ           mrreduce
	VMAXPS       (SI), Y0, Y0

mrreduce:
	VMAXPS       Y1, Y0, Y0
	VEXTRACTF128 $1, Y0, X1
	VMAXPS       X1, X0, X0
	VPERMILPS    $0x4e, X0, X1
	VMAXPS       X1, X0, X0
	VPERMILPS    $0xb1, X0, X1
	VMAXPS       X1, X0, X0
	VMOVSS       X0, (DX)
	ADDQ         R8, DI
	ADDQ         $8, R10
	ADDQ         $4, DX
	DECQ         R9
	JMP          mrrow

mrdone:
	VZEROUPPER
	RET

// func dsRowsF32(dp, p *float32, ld, rows, n int, delta *float32)
// dp[r·ld+c] = p[r·ld+c]·(dp[r·ld+c] − delta[r]) for r < rows and c < n (a
// multiple of 8): attention's dS = P∘(dP − δ).
TEXT ·dsRowsF32(SB), NOSPLIT, $0-48
	MOVQ         dp+0(FP), DI
	MOVQ         p+8(FP), SI
	MOVQ         ld+16(FP), R8
	MOVQ         rows+24(FP), R9
	MOVQ         n+32(FP), R12
	MOVQ         delta+40(FP), R11
	SHLQ         $2, R8

dsrow:
	TESTQ        R9, R9
	JZ           dsdone
	VBROADCASTSS (R11), Y15
	MOVQ         R12, CX
	XORQ         AX, AX

dsloop:
	TESTQ        CX, CX
	JZ           dsnext
	VMOVUPS      (DI)(AX*1), Y0
	VSUBPS       Y15, Y0, Y0
	VMULPS       (SI)(AX*1), Y0, Y0
	VMOVUPS      Y0, (DI)(AX*1)
	ADDQ         $32, AX
	SUBQ         $8, CX
	JMP          dsloop

dsnext:
	ADDQ         R8, DI
	ADDQ         R8, SI
	ADDQ         $4, R11
	DECQ         R9
	JMP          dsrow

dsdone:
	VZEROUPPER
	RET
