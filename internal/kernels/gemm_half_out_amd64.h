// Macros shared by the assembly that narrows float32 GEMM tiles to
// bfloat16 (gemm_half_out_amd64.s, gemm_amx_amd64.s) and by the bfloat16
// norm kernels (norm_half_amd64.s: NARROWCONSTS).

// NARROWCONSTS loads NARROWROW32's constants (clobbers AX): Z8 0x7fff,
// Z9 1, Z10 0x40, Z11 0x7fffffff, Z12 0x7f800000 in every lane.
#define NARROWCONSTS \
	MOVL         $0x7fff, AX     \
	VPBROADCASTD AX, Z8          \
	MOVL         $1, AX          \
	VPBROADCASTD AX, Z9          \
	MOVL         $0x40, AX       \
	VPBROADCASTD AX, Z10         \
	MOVL         $0x7fffffff, AX \
	VPBROADCASTD AX, Z11         \
	MOVL         $0x7f800000, AX \
	VPBROADCASTD AX, Z12

// NARROWROW32 narrows the 32 float32 at (src) to the 32 bfloat16 at
// (dst): round to nearest even as (x + 0x7fff + ((x>>16)&1)) >> 16 on
// the bits, a NaN (|x| > Inf) as (x>>16) | 0x40 (dtype.BF16FromF32, and
// convert_amd64.h's BF16ROUND). Z0–Z7, K1 and K2 are scratch;
// NARROWCONSTS loaded.
#define NARROWROW32(src, dst) \
	VMOVDQU32 (src), Z0       \
	VMOVDQU32 64(src), Z4     \
	VPSRLD    $16, Z0, Z1     \
	VPSRLD    $16, Z4, Z5     \
	VPANDD    Z9, Z1, Z2      \
	VPANDD    Z9, Z5, Z6      \
	VPADDD    Z8, Z2, Z2      \
	VPADDD    Z8, Z6, Z6      \
	VPADDD    Z0, Z2, Z2      \
	VPADDD    Z4, Z6, Z6      \
	VPSRLD    $16, Z2, Z2     \
	VPSRLD    $16, Z6, Z6     \
	VPANDD    Z11, Z0, Z3     \
	VPANDD    Z11, Z4, Z7     \
	VPCMPGTD  Z12, Z3, K1     \
	VPCMPGTD  Z12, Z7, K2     \
	VPORD     Z10, Z1, Z1     \
	VPORD     Z10, Z5, Z5     \
	VMOVDQU32 Z1, K1, Z2      \
	VMOVDQU32 Z5, K2, Z6      \
	VPMOVDW   Z2, (dst)       \
	VPMOVDW   Z6, 32(dst)
