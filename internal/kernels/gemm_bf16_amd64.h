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
