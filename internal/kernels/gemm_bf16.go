package kernels

import (
	"math"
	"math/big"
	"unsafe"
)

// The bfloat16 pair GEMM: with both operands bfloat16 and alpha 1,
// GemmHalf on a CPU with AVX512_BF16 runs a micro-kernel on VDPBF16PS,
// which reads bfloat16 pairs and accumulates in float32, instead of
// widening the operands to float32 while packing. Its panels hold pairs
// of depth values in one 32-bit word (low half first), in the layout of
// the float32 panels with depth halved (p counts pairs, ⌈kc/2⌉ of them;
// an odd kc pads the last pair with zero):
//
//	A: dst[q·mr·kc + p·mr + r] = A[i0+q·mr+r][p0+2p] | A[…][p0+2p+1]<<16
//	B: dst[q·nr·kc + p·nr + c] = B[p0+2p][j0+q·nr+c] | B[p0+2p+1][…]<<16
//
// Each panel keeps the float32 panel's slot (mr·kc words), so the blocked
// driver and its scratch are unchanged; half of each slot is used.
//
// The instruction's arithmetic (Intel's pseudo-code) differs from the
// float32 path: each lane adds the high pair's product, rounded to float32
// (nearest even), then the low pair's, rounded again, as two fused
// multiply-adds; bfloat16 denormal inputs and a denormal accumulator read
// as zero, and denormal results are flushed to zero. dotBF16Pair is its Go
// twin, and sbgemmGo the twin of the micro-kernel.

// dotBF16Pair is one lane of VDPBF16PS: acc plus the products of the high
// then the low bfloat16 halves of a and b.
func dotBF16Pair(acc float32, a, b uint32) float32 {
	acc = fmaBF16(acc, uint16(a>>16), uint16(b>>16))
	return fmaBF16(acc, uint16(a), uint16(b))
}

// defaultNaN is x86's QNaN indefinite, the result of an invalid operation.
const defaultNaN = 0xFFC00000

// fmaBF16 is acc + x·y for bfloat16 x and y, rounded once to float32 to
// nearest even, with denormal inputs read as zero and a denormal result
// flushed to zero. A NaN operand is returned quieted, x's before y's
// before acc's; Inf·0 and Inf−Inf give defaultNaN.
func fmaBF16(acc float32, x, y uint16) float32 {
	xf := daz(math.Float32frombits(uint32(x) << 16))
	yf := daz(math.Float32frombits(uint32(y) << 16))
	acc = daz(acc)
	for _, v := range [3]float32{xf, yf, acc} {
		if v != v {
			return math.Float32frombits(math.Float32bits(v) | 1<<22)
		}
	}
	// The product of two bfloat16 values is exact in float64.
	p := float64(xf) * float64(yf)
	if math.IsNaN(p) || math.IsInf(p, 0) || math.IsInf(float64(acc), 0) {
		s := float64(acc) + p
		if math.IsNaN(s) {
			return math.Float32frombits(defaultNaN)
		}
		return float32(s)
	}
	if p == 0 && acc == 0 {
		return acc + float32(p) // the sign rule of exact zeros
	}
	if sum, exact := twoSum(float64(acc), p); exact {
		return ftz(float32(sum)) // one rounding, from the exact sum
	}
	s := new(big.Float).SetPrec(600).SetFloat64(float64(acc))
	s.Add(s, new(big.Float).SetPrec(600).SetFloat64(p))
	r, _ := s.Float32()
	if s.Sign() == 0 {
		r = 0 // x + (−x) is +0
	}
	return ftz(r)
}

// twoSum returns x + y rounded to float64 and whether that is exact
// (Knuth's TwoSum: the rounding error is exactly err).
func twoSum(x, y float64) (float64, bool) {
	s := x + y
	bv := s - x
	err := (x - (s - bv)) + (y - bv)
	return s, err == 0
}

// daz reads a denormal float32 as zero of its sign.
func daz(v float32) float32 {
	if v != 0 && math.Abs(float64(v)) < 0x1p-126 {
		return float32(math.Copysign(0, float64(v)))
	}
	return v
}

// ftz flushes a denormal float32 result to zero of its sign.
func ftz(v float32) float32 { return daz(v) }

// sbgemmGo is the Go twin of the 12×32 pair micro-kernel: the tile from
// pair panels a and b (⌈k/2⌉ groups of 12 and 32 words), stored as mode
// says, the beta term fused as the assembly's VFMADD231PS is.
func sbgemmGo(k int, a, b, c []float32, ldc int, beta float32, mode int) {
	sbgemmGoPart(12, 32, k, a, b, c, ldc, beta, mode)
}

// sbgemmGoHalf is the Go twin of the six-row pair kernel: sbgemmGo for
// the first six rows of the tile only.
func sbgemmGoHalf(k int, a, b, c []float32, ldc int, beta float32, mode int) {
	sbgemmGoPart(6, 32, k, a, b, c, ldc, beta, mode)
}

// sbgemmGoNarrow is the Go twin of the 16-column pair kernel: sbgemmGo
// for the first 16 columns of the tile only.
func sbgemmGoNarrow(k int, a, b, c []float32, ldc int, beta float32, mode int) {
	sbgemmGoPart(12, 16, k, a, b, c, ldc, beta, mode)
}

// sbgemmGoPart is sbgemmGo for the first rows rows and cols columns of
// the tile, the panels still 12 and 32 words per pair.
func sbgemmGoPart(rows, cols, k int, a, b, c []float32, ldc int, beta float32, mode int) {
	const mr, nr = 12, 32
	kp := (k + 1) / 2
	au, bu := words(a[:mr*kp]), words(b[:nr*kp])
	for r := range rows {
		row := c[r*ldc : r*ldc+cols]
		for j := range row {
			var acc float32
			for p := range kp {
				acc = dotBF16Pair(acc, au[p*mr+r], bu[p*nr+j])
			}
			switch mode {
			case 0:
				row[j] = acc
			case 1:
				row[j] += acc
			default:
				row[j] = fused32(beta, row[j], acc)
			}
		}
	}
}

// fused32 is x·y + z rounded once to float32 (VFMADD231PS with the
// default MXCSR: nearest even, denormals kept).
func fused32(x, y, z float32) float32 {
	f := math.FMA(float64(x), float64(y), float64(z))
	if f == 0 || math.IsInf(f, 0) || math.IsNaN(f) {
		return float32(f) // exact, or a special value either way
	}
	s := new(big.Float).SetPrec(600).SetFloat64(float64(x))
	s.Mul(s, new(big.Float).SetFloat64(float64(y)))
	s.Add(s, new(big.Float).SetFloat64(float64(z)))
	r, _ := s.Float32()
	return r
}

// words views packed float32 scratch as the 32-bit pair words it holds.
func words(s []float32) []uint32 {
	return unsafe.Slice((*uint32)(unsafe.Pointer(unsafe.SliceData(s))), len(s))
}

// floats views 32-bit pair words as the float32 scratch that holds them
// (words' inverse), for the pair kernels' panel arguments.
func floats(s []uint32) []float32 {
	return unsafe.Slice((*float32)(unsafe.Pointer(unsafe.SliceData(s))), len(s))
}
