// Macros shared by the bfloat16 pair micro-kernels (gemm_bf16_amd64.s,
// conv_dx_amd64.s).

// The Go assembler has no VDPBF16PS, so DPBF16 emits its encoding:
// EVEX.512.F3.0F38.W0 52 /r, VDPBF16PS zmm(d), zmm(s1), zmm(s2) with no
// mask: 62, P0 (R̄ X̄ B̄ R̄' 0 0 1 0: d's bits 3 and 4 in R and R', s2's
// bits 3 and 4 in B and X), P1 (W=0, s1's low four bits inverted, 1,
// pp=10 for F3), P2 (z=0, L'L=10 for 512 bits, b=0, V̄' from s1's bit 4,
// aaa=000), the opcode 52 and ModRM 11 d[2:0] s2[2:0].
#define DPBF16(d, s1, s2) \
	BYTE $0x62; \
	BYTE $((1-((d>>3)&1))<<7 | (1-((s2>>4)&1))<<6 | (1-((s2>>3)&1))<<5 | (1-((d>>4)&1))<<4 | 2); \
	BYTE $((15-(s1&15))<<3 | 6); \
	BYTE $(0x40 | (1-((s1>>4)&1))<<3); \
	BYTE $0x52; \
	BYTE $(0xC0 | (d&7)<<3 | (s2&7))

// PAIRROW(ao, zt, t, lo, hi) adds one pair step to a row: A's pair at
// ao(AX), broadcast into zt (register number t), dotted with B's pair row in Z24 and Z25 into the
// accumulators Z(lo) and Z(hi).
#define PAIRROW(ao, zt, t, lo, hi) \
	VPBROADCASTD ao(AX), zt; \
	DPBF16(lo, t, 24); \
	DPBF16(hi, t, 25)

// PAIRROWS6(ao) adds one pair step to the tile's first six rows (A's pairs
// from ao(AX)), and PAIRROWS6HI(ao) to its last six (from ao+24(AX)), B's
// pair row in Z24 and Z25.
#define PAIRROWS6(ao) \
	PAIRROW(ao+0, Z26, 26, 0, 1); \
	PAIRROW(ao+4, Z27, 27, 2, 3); \
	PAIRROW(ao+8, Z28, 28, 4, 5); \
	PAIRROW(ao+12, Z29, 29, 6, 7); \
	PAIRROW(ao+16, Z30, 30, 8, 9); \
	PAIRROW(ao+20, Z31, 31, 10, 11)

#define PAIRROWS6HI(ao) \
	PAIRROW(ao+24, Z26, 26, 12, 13); \
	PAIRROW(ao+28, Z27, 27, 14, 15); \
	PAIRROW(ao+32, Z28, 28, 16, 17); \
	PAIRROW(ao+36, Z29, 29, 18, 19); \
	PAIRROW(ao+40, Z30, 30, 20, 21); \
	PAIRROW(ao+44, Z31, 31, 22, 23)
