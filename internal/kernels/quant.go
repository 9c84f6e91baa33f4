package kernels

import (
	"fmt"
	"math"
)

// Symmetric int8 quantization with zero point 0, for package quant:
//
//	q = clamp(round(x·(1/scale)), −QuantMax, QuantMax)   (round half to even)
//	x ≈ q·scale
//
// The range is symmetric (−127…127; −128 is never produced), so negating a
// quantized tensor stays exact and the padding zeros of a convolution are
// the integer 0. 1/scale is rounded to float32 once per row, as PyTorch's
// quantize_per_tensor does, so for |x| ≤ QuantMax·scale the round trip
// error |x − q·scale| is at most scale·(1/2 + 2^−16) (half a step plus the
// rounding of x·(1/scale), below 128·2^−23 steps).

// QuantMax is the largest magnitude of a quantized value.
const QuantMax = 127

// MinQuantScale is the smallest scale QuantScales returns (float32's
// machine epsilon, PyTorch's floor for observers): an all-zero row gets it,
// and its values quantize to 0.
const MinQuantScale = 0x1p-23

// roundMagic is 1.5·2^23: adding it to a float32 of magnitude below 2^22
// rounds it to an integer (half to even) in the low mantissa bits.
const roundMagic = 0x1.8p23

// quantGrain is the elements per worker range of the elementwise loops.
const quantGrain = 1 << 15

// QuantScales writes dst[r] = max(max_j |src[r·cols + j]| / QuantMax,
// MinQuantScale) for the rows of src, a (rows, cols) matrix
// (cols = len(src)/rows): the symmetric scale of each row.
func QuantScales(dst, src []float32, rows int) {
	if rows <= 0 || len(src)%rows != 0 || len(dst) < rows {
		panic(fmt.Sprintf("kernels.QuantScales: %d values in %d rows, %d scales", len(src), rows, len(dst)))
	}
	cols := len(src) / rows
	if rows == 1 {
		// One row: split it across the workers and combine their maxima.
		parts := make([]float32, max(1, Workers()))
		per := (cols + len(parts) - 1) / len(parts)
		ParallelFor(len(parts), 1, func(lo, hi int) {
			for p := lo; p < hi; p++ {
				parts[p] = absMax(src[min(p*per, cols):min((p+1)*per, cols)])
			}
		})
		m := float32(0)
		for _, v := range parts {
			m = max(m, v)
		}
		dst[0] = scaleOf(m)
		return
	}
	ParallelFor(rows, max(1, quantGrain/max(cols, 1)), func(lo, hi int) {
		for r := lo; r < hi; r++ {
			dst[r] = scaleOf(absMax(src[r*cols : (r+1)*cols]))
		}
	})
}

// scaleOf returns the symmetric scale for a largest magnitude m.
func scaleOf(m float32) float32 {
	return max(m/QuantMax, MinQuantScale)
}

// absMax returns max |v| over s (0 for an empty s): the magnitudes' bit
// patterns compare as unsigned integers in the order of their values (a
// NaN above every number), in 4 independent running maxima.
func absMax(s []float32) float32 {
	var m0, m1, m2, m3 uint32
	i := 0
	if CPU.AVX2FMA && len(s) >= 32 {
		i = len(s) &^ 31
		m0 = qAbsMaxAVX2(&s[0], i)
	}
	for ; i+4 <= len(s); i += 4 {
		v := (*[4]float32)(s[i:])
		a0 := math.Float32bits(v[0]) &^ (1 << 31)
		a1 := math.Float32bits(v[1]) &^ (1 << 31)
		a2 := math.Float32bits(v[2]) &^ (1 << 31)
		a3 := math.Float32bits(v[3]) &^ (1 << 31)
		if a0 > m0 {
			m0 = a0
		}
		if a1 > m1 {
			m1 = a1
		}
		if a2 > m2 {
			m2 = a2
		}
		if a3 > m3 {
			m3 = a3
		}
	}
	for ; i < len(s); i++ {
		m0 = max(m0, math.Float32bits(s[i])&^(1<<31))
	}
	return math.Float32frombits(max(m0, m1, m2, m3))
}

func abs32(v float32) float32 {
	return math.Float32frombits(math.Float32bits(v) &^ (1 << 31))
}

// scaleAt returns the scale of row r: scale holds one per row or one for
// all.
func scaleAt(scale []float32, r int) float32 {
	if len(scale) == 1 {
		return scale[0]
	}
	return scale[r]
}

// checkScales panics unless scale has one value or one per row, and src
// splits into rows.
func checkScales(fn string, n, rows int, scale []float32) {
	if rows <= 0 || n%rows != 0 || (len(scale) != 1 && len(scale) != rows) {
		panic(fmt.Sprintf("kernels.%s: %d values in %d rows with %d scales; want rows dividing the values and 1 or rows scales", fn, n, rows, len(scale)))
	}
}

// forRows runs f over the elements of a (rows, cols) matrix in ranges of
// about quantGrain elements split across the workers, passing each range
// with its row.
func forRows(n, rows int, f func(r, lo, hi int)) {
	cols := n / rows
	if cols == 0 {
		return
	}
	ParallelFor(n, quantGrain, func(lo, hi int) {
		for i := lo; i < hi; {
			r := i / cols
			end := min(hi, (r+1)*cols)
			f(r, i, end)
			i = end
		}
	})
}

// Quantize writes dst = clamp(round(src·(1/scale[r])), −127, 127) for src
// viewed as (rows, len(src)/rows); scale holds rows values or one. A NaN
// gives −127 (inputs are meant to be finite; −128 is never written).
func Quantize(dst []int8, src []float32, scale []float32, rows int) {
	checkScales("Quantize", len(src), rows, scale)
	if len(dst) < len(src) {
		panic(fmt.Sprintf("kernels.Quantize: %d outputs for %d values", len(dst), len(src)))
	}
	forRows(len(src), rows, func(r, lo, hi int) {
		quantizeRun(dst[lo:hi], src[lo:hi], 1/scaleAt(scale, r))
	})
}

// quantizeRun quantizes src with the reciprocal scale inv.
func quantizeRun(dst []int8, src []float32, inv float32) {
	dst = dst[:len(src)]
	i := 0
	if CPU.AVX2FMA && len(src) >= 32 {
		i = len(src) &^ 31
		qQuantizeAVX2(&dst[0], &src[0], i, inv)
	}
	for ; i < len(src); i++ {
		dst[i] = int8(quantInt(src[i] * inv))
	}
}

// quantInt returns round(clamp(v, −127, 127)) for v = x·(1/scale), a NaN
// giving −127 (as the assembly does).
func quantInt(v float32) int32 {
	if !(v >= -QuantMax) {
		v = -QuantMax
	}
	if v > QuantMax {
		v = QuantMax
	}
	return int32(math.Float32bits(v+roundMagic)) - int32(math.Float32bits(roundMagic))
}

// FakeQuantize writes dst = clamp(round(src·(1/scale[r])), −127, 127)·
// scale[r] (quantize, then dequantize) for src viewed as (rows,
// len(src)/rows); scale holds rows values or one. dst may be src.
func FakeQuantize[T Float](dst, src []T, scale []float32, rows int) {
	checkScales("FakeQuantize", len(src), rows, scale)
	forRows(len(src), rows, func(r, lo, hi int) {
		s := scaleAt(scale, r)
		d, x := dst[lo:hi], src[lo:hi]
		switch dd := any(d).(type) {
		case []float32:
			xx := any(x).([]float32)
			inv := 1 / s
			for i, v := range xx {
				dd[i] = float32(quantInt(v*inv)) * s
			}
		default:
			inv, s64 := 1/float64(s), float64(s)
			for i, v := range x {
				q := math.RoundToEven(min(max(float64(v)*inv, -QuantMax), QuantMax))
				d[i] = T(q * s64)
			}
		}
	})
}

// FakeQuantizeGrad writes the straight-through gradient of FakeQuantize:
// dx = dy where src·(1/scale[r]) rounds into [−127, 127] (|v| < 127.5),
// else 0. dx may be dy.
func FakeQuantizeGrad[T Float](dx, dy, src []T, scale []float32, rows int) {
	checkScales("FakeQuantizeGrad", len(src), rows, scale)
	forRows(len(src), rows, func(r, lo, hi int) {
		s := scaleAt(scale, r)
		g, y, x := dx[lo:hi], dy[lo:hi], src[lo:hi]
		switch xx := any(x).(type) {
		case []float32:
			inv := 1 / s
			for i, v := range xx {
				if abs32(v*inv) < QuantMax+0.5 {
					g[i] = y[i]
				} else {
					g[i] = 0
				}
			}
		default:
			inv := 1 / float64(s)
			for i, v := range x {
				if math.Abs(float64(v)*inv) < QuantMax+0.5 {
					g[i] = y[i]
				} else {
					g[i] = 0
				}
			}
		}
	})
}

// GemmI8T sets C = A·Bᵀ exactly for A M×K (a[i·lda + k]), B N×K
// (b[j·ldb + k], the (out, in) layout of a Linear weight) and C M×N (c[i·ldc
// + j]), for K ≤ MaxI8K, packing B into a pooled buffer.
func GemmI8T(m, n, k int, a []int8, lda int, b []int8, ldb int, c []int32, ldc int) {
	checkI8Dims("GemmI8T", m, n, k)
	if m == 0 || n == 0 {
		return
	}
	if ldb < k || len(b) < (n-1)*ldb+k {
		panic(fmt.Sprintf("kernels.GemmI8T: ldb=%d len(b)=%d for n=%d k=%d", ldb, len(b), n, k))
	}
	buf := getI16(&packBPool, packedI8Len(k, n))
	p := PackedI8{K: k, N: n, kp: (k + 1) / 2, panels: buf.s}
	p.pack(b, ldb, true)
	gemmI8(m, a, lda, &p, c, ldc)
	packBPool.Put(buf)
}
