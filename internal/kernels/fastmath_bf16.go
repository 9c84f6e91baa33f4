package kernels

import "github.com/headroom-ml/headroom/dtype"

// GeluTanhBF16 writes d = GELU(s) (the tanh form) for bfloat16 s and d of
// one length, converting in registers: each element widened exactly,
// geluTanh32 in float32 (the AVX2 lanes of geluTanhF32 where the CPU has
// them, the Go function for the rest, which gives the same bits) and
// rounded to nearest even, so d has the bits of widening s, UnaryFlat's
// GELU and narrowing. Long runs are split across the workers.
func GeluTanhBF16(d, s []uint16) {
	halfRun(len(d), func(lo, hi int) {
		d, s := d[lo:hi], s[lo:hi]
		k := 0
		if CPU.AVX2FMA {
			k = len(d) &^ 7
		}
		if k > 0 {
			geluTanhBF16(&d[0], &s[0], k)
		}
		for i := k; i < len(d); i++ {
			d[i] = dtype.BF16FromF32(geluTanh32(dtype.BF16ToF32(s[i])))
		}
	})
}

// GeluTanhGradBF16 writes dx = dy·GELU′(x) for bfloat16 dx, dy and x of
// one length, converting in registers as GeluTanhBF16 does: the bits of
// widening dy and x, UnaryGrad's GELU gradient and narrowing.
func GeluTanhGradBF16(dx, dy, x []uint16) {
	halfRun(len(dx), func(lo, hi int) {
		dx, dy, x := dx[lo:hi], dy[lo:hi], x[lo:hi]
		k := 0
		if CPU.AVX2FMA {
			k = len(dx) &^ 7
		}
		if k > 0 {
			geluTanhGradBF16(&dx[0], &dy[0], &x[0], k)
		}
		for i := k; i < len(dx); i++ {
			dx[i] = dtype.BF16FromF32(dtype.BF16ToF32(dy[i]) * geluTanhDeriv32(dtype.BF16ToF32(x[i])))
		}
	})
}

// halfRun runs part over [0, n), split across the workers in pieces of at
// least fastGrain when n is at least fastParallelMin.
func halfRun(n int, part func(lo, hi int)) {
	if n < fastParallelMin {
		part(0, n)
		return
	}
	claimFor(n, fastGrain, part)
}
