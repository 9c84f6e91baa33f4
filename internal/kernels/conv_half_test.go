package kernels

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/headroom-ml/headroom/dtype"
)

// half16 rounds v to 16-bit floats (bfloat16 or binary16) and returns the
// bits and their exact values.
func half16(v []float64, bf16 bool) (Half16, []float64) {
	h := Half16{Bits: make([]uint16, len(v)), BF16: bf16}
	exact := make([]float64, len(v))
	for i, x := range v {
		if bf16 {
			h.Bits[i] = dtype.BF16FromF32(float32(x))
			exact[i] = float64(dtype.BF16ToF32(h.Bits[i]))
		} else {
			h.Bits[i] = dtype.F16FromF32(float32(x))
			exact[i] = float64(dtype.F16ToF32(h.Bits[i]))
		}
	}
	return h, exact
}

func abs64(v []float64) []float64 {
	out := make([]float64, len(v))
	for i, x := range v {
		out[i] = math.Abs(x)
	}
	return out
}

// convHalfBound is the error allowed a float32 sum of the terms whose
// magnitudes add up to mag, terms of them: each term's product is exact
// (16-bit operands) and each addition rounds once to float32 (VDPBF16PS
// fuses one product per rounding, as the widened path's FMA does), so the
// error is at most terms·2⁻²⁴·mag; twice that covers the blocked GEMM's
// partial sums and the Go twin's order.
func convHalfBound(terms int, mag float64) float64 {
	return 2 * float64(terms+1) * 0x1p-24 * mag
}

// checkHalf compares got (float32, or 16-bit bits when h is not nil) with
// the exact want, each element allowed bound(i) plus, for a 16-bit
// output, its own rounding (2⁻⁸ relative for bfloat16, 2⁻¹¹ for binary16,
// 2⁻²⁴ absolute for binary16's subnormals).
func checkHalf(t *testing.T, what string, got []float32, h *Half16, want []float64, bound func(int) float64) {
	t.Helper()
	for i, w := range want {
		var g float64
		tol := bound(i)
		switch {
		case h == nil:
			g = float64(got[i])
		case h.BF16:
			g = float64(dtype.BF16ToF32(h.Bits[i]))
			tol = tol*(1+0x1p-8) + 0x1p-8*math.Abs(w)
		default:
			g = float64(dtype.F16ToF32(h.Bits[i]))
			tol = tol*(1+0x1p-11) + 0x1p-11*math.Abs(w) + 0x1p-24
		}
		if !(math.Abs(g-w) <= tol) {
			t.Fatalf("%s: element %d = %v, want %v ± %v", what, i, g, w, tol)
		}
	}
}

// checkConvHalf runs the three 16-bit kernels on x, w, dy rounded to 16 bits,
// into float32 and into 16-bit outputs prefilled with NaN (as is ws), and
// compares them with the float64 reference on the rounded values and with
// the float32 kernels on the widened values.
func checkConvHalf(t *testing.T, p ConvArgs, x, w, dy []float64, bf16 bool) {
	t.Helper()
	hx, ex := half16(x, bf16)
	hw, ew := half16(w, bf16)
	hdy, edy := half16(dy, bf16)
	ry, rdx, rdw := refConv(p, ex, ew, edy)
	my, mdx, mdw := refConv(p, abs64(ex), abs64(ew), abs64(edy))
	fy, fdx, fdw := make([]float32, len(ry)), make([]float32, len(rdx)), make([]float32, len(rdw))
	Conv2d(p, fy, to32(ex), to32(ew), convWS[float32](ConvForward, p))
	Conv2dGradInput(p, fdx, to32(edy), to32(ew), convWS[float32](ConvGradInput, p))
	Conv2dGradWeight(p, fdw, to32(edy), to32(ex), convWS[float32](ConvGradWeight, p))
	crs := p.C / p.Groups * p.R * p.S
	kinds := []struct {
		kind      ConvKind
		run       func(ConvOut, []float32)
		want, mag []float64
		widened   []float32
		terms     int
	}{
		{ConvForward, func(o ConvOut, ws []float32) { Conv2dHalf(p, o, hx, hw, ws) }, ry, my, fy, crs},
		{ConvGradInput, func(o ConvOut, ws []float32) { Conv2dGradInputHalf(p, o, hdy, hw, ws) }, rdx, mdx, fdx, p.K / p.Groups * p.R * p.S},
		{ConvGradWeight, func(o ConvOut, ws []float32) { Conv2dGradWeightHalf(p, o, hdy, hx, ws) }, rdw, mdw, fdw, p.N * p.OH * p.OW},
	}
	for _, k := range kinds {
		bound := func(i int) float64 { return convHalfBound(k.terms, k.mag[i]) }
		// The float32 kernels on the widened values are within bound of
		// the reference too.
		toWidened := func(i int) float64 { return 2 * bound(i) }
		f := nanSlice[float32](len(k.want))
		k.run(ConvOut{F: f}, nanSlice[float32](ConvWorkspace(k.kind, p, ConvHalf)))
		what := fmt.Sprintf("%sHalf %+v bf16=%v float32 out", k.kind, p, bf16)
		checkHalf(t, what, f, nil, k.want, bound)
		checkHalf(t, what+" vs widened", f, nil, to64(k.widened), toWidened)
		h := Half16{Bits: make([]uint16, len(k.want)), BF16: bf16}
		for i := range h.Bits {
			h.Bits[i] = 0x7fff // NaN in both formats
		}
		k.run(ConvOut{H: h}, nanSlice[float32](ConvWorkspace(k.kind, p, ConvHalf)))
		checkHalf(t, fmt.Sprintf("%sHalf %+v bf16=%v 16-bit out", k.kind, p, bf16), nil, &h, k.want, bound)
		checkHalf(t, fmt.Sprintf("%sHalf %+v bf16=%v 16-bit out vs widened", k.kind, p, bf16), nil, &h, to64(k.widened), toWidened)
	}
}

func to64(v []float32) []float64 {
	out := make([]float64, len(v))
	for i, x := range v {
		out[i] = float64(x)
	}
	return out
}

// TestConv2dHalf runs the 16-bit kernels over convPathShapes and random
// shapes (stride, padding, dilation, groups, 1×1), bfloat16 and binary16,
// under the default tiling, one output row per band with every call split
// across the workers (tiles from ws and from the heap), and the weight
// gradient split by blocks of dw's columns.
func TestConv2dHalf(t *testing.T) {
	settings := []convSetting{{convTile, convPart, convDWSmall}, {1, 1, convDWSmall}, {100, 1, 0}}
	forConvShapes(t, rand.New(rand.NewPCG(7, 8)), settings, 20, func(t *testing.T, p ConvArgs, x, w, dy []float64) {
		checkConvHalf(t, p, x, w, dy, true)
		checkConvHalf(t, p, x, w, dy, false)
	})
}
