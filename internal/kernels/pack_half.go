package kernels

import "github.com/headroom-ml/headroom/dtype"

// Widening packers of 16-bit B panels for the float32 kernels: when a
// GEMM's operand is bfloat16 or binary16 and no pair kernel takes it
// (a CPU without AVX512_BF16, or a binary16 operand), packB widens each
// depth's run of nr values into its panel. widenRows does a whole panel of
// a non-transposed B in one call (assembly on AVX2: VPMOVZXWD and a shift
// for bfloat16, VCVTPH2PS for binary16), instead of widening each run of
// nr values into a strip by a call of its own and copying the strip into
// the panel; widenRowsGo is its Go twin, the noasm packer and the tests'
// reference. Both are exact conversions, so they agree bit for bit.

// widenRowsGo writes k rows of w 16-bit floats, ld apart from h[at:], into
// d as k groups of w float32 (bfloat16 when bf16, else binary16), widened
// exactly as package dtype widens them.
func widenRowsGo(d []float32, h []uint16, at, ld, k, w int, bf16 bool) {
	for p := range k {
		row := h[at+p*ld : at+p*ld+w]
		g := d[p*w : p*w+w]
		if bf16 {
			dtype.BF16ToF32s(g, row)
		} else {
			dtype.F16ToF32s(g, row)
		}
	}
}
