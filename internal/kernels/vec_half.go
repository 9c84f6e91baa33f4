package kernels

import "github.com/headroom-ml/headroom/dtype"

// Elementwise kernels on contiguous 16-bit float operands (the bits of
// bfloat16 or F16 values, one dtype for all operands of a call). Each
// gives, bit for bit, what widening every operand to float32 (exactly),
// running the float32 kernel and rounding the result back to the 16-bit
// format (round to nearest even, NaNs quieted) gives; the assembly
// (vec_half_amd64.s) converts in registers, so no float32 copy of an
// operand goes through memory. Runs of at least vecParallelMin elements
// are split across the workers.

// Patterns of the 16-bit formats: the first NaN (every pattern from it to
// 0x7fff is a NaN) and the quiet bit that narrowing a NaN sets.
const (
	bf16FirstNaN, bf16Quiet = 0x7f81, 0x0040
	f16FirstNaN, f16Quiet   = 0x7c01, 0x0200
)

// BinaryBF16 sets dst = a op b for bfloat16 slices of one length and op
// BAdd, BSub or BMul, computed in float32 and rounded once; it reports
// false, doing nothing, for any other op.
func BinaryBF16(op int, dst, a, b []uint16) bool {
	if op != BAdd && op != BSub && op != BMul {
		return false
	}
	a, b = a[:len(dst)], b[:len(dst)]
	half16For(len(dst), func(lo, hi int) { binaryBF16Part(op, dst[lo:hi], a[lo:hi], b[lo:hi]) })
	return true
}

func binaryBF16Part(op int, d, a, b []uint16) {
	k := 0
	if CPU.AVX2FMA {
		if k = len(d) &^ 7; k > 0 {
			switch op {
			case BAdd:
				vecAddBF16(&d[0], &a[0], &b[0], k)
			case BSub:
				vecSubBF16(&d[0], &a[0], &b[0], k)
			default:
				vecMulBF16(&d[0], &a[0], &b[0], k)
			}
		}
	}
	for i := k; i < len(d); i++ {
		x, y := dtype.BF16ToF32(a[i]), dtype.BF16ToF32(b[i])
		var v float32
		switch op {
		case BAdd:
			v = x + y
		case BSub:
			v = x - y
		default:
			v = x * y
		}
		d[i] = dtype.BF16FromF32(v)
	}
}

// ReluHalf sets dst = src where src > 0 and +0 elsewhere (NaN and -0
// included) for slices of one length, of bfloat16 (bf) or F16 bits: ReLU
// is exact, so this is a selection of bits.
func ReluHalf(dst, src []uint16, bf bool) {
	src = src[:len(dst)]
	lim, _ := halfPatterns(bf)
	half16For(len(dst), func(lo, hi int) {
		d, s := dst[lo:hi], src[lo:hi]
		k := 0
		if CPU.AVX2FMA {
			if k = len(d) &^ 15; k > 0 {
				vecRelu16(&d[0], &s[0], k, int(lim))
			}
		}
		for i := k; i < len(d); i++ {
			d[i] = s[i] & keepPositive(s[i], lim)
		}
	})
}

// ReluGradHalf sets dx = dy where y > 0 and +0 elsewhere for slices of
// one length, of bfloat16 (bf) or F16 bits; a NaN dy that is kept gets
// its quiet bit, as its float32 widening would when rounded back.
func ReluGradHalf(dx, dy, y []uint16, bf bool) {
	dy, y = dy[:len(dx)], y[:len(dx)]
	lim, quiet := halfPatterns(bf)
	half16For(len(dx), func(lo, hi int) {
		d, g, v := dx[lo:hi], dy[lo:hi], y[lo:hi]
		k := 0
		if CPU.AVX2FMA {
			if k = len(d) &^ 15; k > 0 {
				vecReluGrad16(&d[0], &g[0], &v[0], k, int(lim), int(quiet))
			}
		}
		for i := k; i < len(d); i++ {
			q := g[i]
			if q&0x7fff >= lim {
				q |= quiet
			}
			d[i] = q & keepPositive(v[i], lim)
		}
	})
}

// halfPatterns returns the first NaN pattern and the quiet bit of
// bfloat16 (bf) or F16.
func halfPatterns(bf bool) (lim, quiet uint16) {
	if bf {
		return bf16FirstNaN, bf16Quiet
	}
	return f16FirstNaN, f16Quiet
}

// keepPositive returns all ones when the 16-bit float v is positive (not
// zero, not NaN: 0 < v < lim as a signed integer), else zero.
func keepPositive(v, lim uint16) uint16 {
	if int16(v) > 0 && v < lim {
		return 0xffff
	}
	return 0
}

// half16For runs f over [0, n), split across the workers from
// vecParallelMin elements.
func half16For(n int, f func(lo, hi int)) {
	if n < vecParallelMin {
		f(0, n)
		return
	}
	ParallelFor(n, vecGrain, f)
}

// AxpyBF16 adds alpha·x to y for bfloat16 slices of one length: y =
// bf16(y + float32(alpha)·x) in float32, the product rounded before the
// sum, as Axpy on the float32 widenings then rounding y gives.
func AxpyBF16(alpha float64, x, y []uint16) {
	x = x[:len(y)]
	a := float32(alpha)
	half16For(len(y), func(lo, hi int) {
		xs, ys := x[lo:hi], y[lo:hi]
		k := 0
		if CPU.AVX2FMA {
			if k = len(ys) &^ 7; k > 0 {
				vecAxpyBF16(&ys[0], &xs[0], a, k)
			}
		}
		for i := k; i < len(ys); i++ {
			ys[i] = dtype.BF16FromF32(dtype.BF16ToF32(ys[i]) + float32(a*dtype.BF16ToF32(xs[i])))
		}
	})
}

// accBF16 adds the float64 widening of each bfloat16 h[j] to acc[j]
// (slices of one length): the bits of acc[j] += float64(v), v the
// float32 widening of h[j], NaN payloads included.
func accBF16(acc []float64, h []uint16) {
	h = h[:len(acc)]
	k := 0
	if CPU.AVX2FMA {
		if k = len(acc) &^ 7; k > 0 {
			accBF16F64(&acc[0], &h[0], k)
		}
	}
	for j := k; j < len(acc); j++ {
		acc[j] += float64(dtype.BF16ToF32(h[j]))
	}
}
