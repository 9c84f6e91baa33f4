// Macros shared by the assembly that converts between float32 and 16-bit
// floats (convert_amd64.s, vec_half_amd64.s, norm_half_amd64.s,
// pack_half_amd64.s).

// BF16ROUND rounds the 8 floats in x to bfloat16, leaving each result in
// the low half of its 32-bit lane of r: r = (x + 0x7fff + ((x>>16)&1)) >> 16,
// or (x>>16) | 0x40 where x is a NaN. t and m are scratch. Constants: Y8
// 0x7fff, Y9 1, Y10 0x40, Y11 0x7fffffff, Y12 0x7f800000.
#define BF16ROUND(x, r, t, m) \
	VPSRLD    $16, x, t   \
	VPAND     Y9, t, r    \
	VPADDD    Y8, r, r    \
	VPADDD    x, r, r     \
	VPSRLD    $16, r, r   \
	VPOR      Y10, t, t   \
	VPAND     Y11, x, m   \
	VPCMPGTD  Y12, m, m   \
	VPBLENDVB m, t, r, r

// BF16CONSTS loads BF16ROUND's constants into Y8..Y12 (clobbers AX).
#define BF16CONSTS \
	MOVL         $0x7fff, AX      \
	VMOVQ        AX, X8           \
	VPBROADCASTD X8, Y8           \
	MOVL         $1, AX           \
	VMOVQ        AX, X9           \
	VPBROADCASTD X9, Y9           \
	MOVL         $0x40, AX        \
	VMOVQ        AX, X10          \
	VPBROADCASTD X10, Y10         \
	MOVL         $0x7fffffff, AX  \
	VMOVQ        AX, X11          \
	VPBROADCASTD X11, Y11         \
	MOVL         $0x7f800000, AX  \
	VMOVQ        AX, X12          \
	VPBROADCASTD X12, Y12

// BF16STORE8 rounds the 8 floats in x to bfloat16 and stores them (16
// bytes) at m; r (rx its low half), t, u are scratch (BF16CONSTS loaded).
#define BF16STORE8(x, m, r, rx, t, u) \
	BF16ROUND(x, r, t, u)     \
	VPACKUSDW r, r, r         \
	VPERMQ    $0xd8, r, r     \
	VMOVDQU   rx, m

// BF16LOAD8 widens the 8 bfloat16 at m to the floats in r (exact).
#define BF16LOAD8(m, r) \
	VPMOVZXWD m, r    \
	VPSLLD    $16, r, r

// H2F converts the 8 halves at m into the floats in r. VCVTPH2PS quiets a
// signalling NaN (sets bit 22); package dtype keeps the payload as it is,
// so in lanes where r is a NaN bit 22 is put back to the half's bit 9.
// Y8 holds 0x00400000 in every lane; t and u are scratch.
#define H2F(m, r, t, u) \
	VCVTPH2PS m, r         \
	VPMOVZXWD m, t         \
	VCMPPS    $3, r, r, u  \
	VPSLLD    $13, t, t    \
	VPANDN    u, t, t      \
	VPAND     Y8, t, t     \
	VPANDN    r, t, r
