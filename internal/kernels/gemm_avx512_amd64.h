// Macros shared by the 12×32 AVX-512 micro-kernels (float32 and bfloat16
// pairs), whose tile lives in Z0..Z23.

// ZERO12 clears the first six rows' accumulators, Z0..Z11.
#define ZERO12 \
	VPXORD Z0, Z0, Z0; \
	VPXORD Z1, Z1, Z1; \
	VPXORD Z2, Z2, Z2; \
	VPXORD Z3, Z3, Z3; \
	VPXORD Z4, Z4, Z4; \
	VPXORD Z5, Z5, Z5; \
	VPXORD Z6, Z6, Z6; \
	VPXORD Z7, Z7, Z7; \
	VPXORD Z8, Z8, Z8; \
	VPXORD Z9, Z9, Z9; \
	VPXORD Z10, Z10, Z10; \
	VPXORD Z11, Z11, Z11

// ZERO24 clears the tile's accumulators Z0..Z23.
#define ZERO24 \
	ZERO12; \
	VPXORD Z12, Z12, Z12; \
	VPXORD Z13, Z13, Z13; \
	VPXORD Z14, Z14, Z14; \
	VPXORD Z15, Z15, Z15; \
	VPXORD Z16, Z16, Z16; \
	VPXORD Z17, Z17, Z17; \
	VPXORD Z18, Z18, Z18; \
	VPXORD Z19, Z19, Z19; \
	VPXORD Z20, Z20, Z20; \
	VPXORD Z21, Z21, Z21; \
	VPXORD Z22, Z22, Z22; \
	VPXORD Z23, Z23, Z23

// The tile's rows are stored at DI, which steps by SI (ldc in bytes).

// STORE(lo, hi) writes one row: C[0:16] = lo, C[16:32] = hi.
#define STORE(lo, hi) \
	VMOVUPS lo, (DI);   \
	VMOVUPS hi, 64(DI); \
	ADDQ    SI, DI

// ADDROW(lo, hi) does one row of C += acc.
#define ADDROW(lo, hi) \
	VADDPS  (DI), lo, lo;   \
	VADDPS  64(DI), hi, hi; \
	VMOVUPS lo, (DI);       \
	VMOVUPS hi, 64(DI);     \
	ADDQ    SI, DI

// BETAROW(lo, hi) does one row of C = acc + beta·C, beta in Z24.
#define BETAROW(lo, hi) \
	VFMADD231PS (DI), Z24, lo;   \
	VFMADD231PS 64(DI), Z24, hi; \
	VMOVUPS     lo, (DI);        \
	VMOVUPS     hi, 64(DI);      \
	ADDQ        SI, DI

// ARGS loads the kernels' arguments: k in CX (and k/4 in DX), a in AX, b
// in BX, c in DI, ldc in bytes in SI.
#define ARGS \
	MOVQ k+0(FP), CX; \
	MOVQ a+8(FP), AX; \
	MOVQ b+16(FP), BX; \
	MOVQ c+24(FP), DI; \
	MOVQ ldc+32(FP), SI; \
	SHLQ $2, SI; \
	MOVQ CX, DX; \
	SHRQ $2, DX
