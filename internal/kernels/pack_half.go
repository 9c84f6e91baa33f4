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

// packRowsHalfWide is packRowsHalf for a full panel of a kernel with a
// packer of its own (kn.packA): the mr rows are widened a block of
// depths at a time into strip, as mr rows of kb floats, and kn.packA
// interleaves and scales the block, instead of a Go loop storing every
// value mr apart. kb is the most depths that fit strip, in multiples of
// 8 (the assembly packers' step); a strip shorter than 8·mr falls back to
// packRowsHalf. Widening is exact and both scale by the same multiply, so
// the panel is the same bit for bit.
func packRowsHalfWide[T Float](kn *gemmKernel[T], d []T, src operand[T], strip []float32, at, ld, kc int, alpha T) {
	mr := kn.mr
	kb := min(len(strip)/mr&^7, kc)
	if kb < 8 {
		packRowsHalf(d, src, strip, at, ld, kc, mr, mr, alpha)
		return
	}
	for p := 0; p < kc; p += kb {
		n := min(kb, kc-p)
		for r := range mr {
			row := at + r*ld + p
			halfToF32(strip[r*n:r*n+n], src.h[row:row+n], src.bf16)
		}
		kn.packA(d[p*mr:], as[T](strip), 0, n, n, alpha)
	}
}

// widenColsGo writes nr runs of k 16-bit floats, ld apart from h[at:],
// into d as k groups of nr float32 (run c is column c of every group),
// widened exactly as package dtype widens them: a full panel of a
// transposed B. widenCols is the same in assembly for bfloat16 on AVX2.
func widenColsGo(d []float32, h []uint16, at, ld, k, nr int, bf16 bool) {
	for c := range nr {
		run := h[at+c*ld : at+c*ld+k]
		for p, v := range run {
			if bf16 {
				d[p*nr+c] = dtype.BF16ToF32(v)
			} else {
				d[p*nr+c] = dtype.F16ToF32(v)
			}
		}
	}
}
