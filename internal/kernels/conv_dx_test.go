package kernels

import (
	"fmt"
	"math"
	"math/rand"
	"strings"
	"testing"
)

// dxCase is a shape for the direct convolution's tests.
type dxCase struct{ n, c, k, h, w int }

// args is the case's convolution.
func (c dxCase) args() ConvArgs {
	return ConvArgs{N: c.n, C: c.c, H: c.h, W: c.w, K: c.k, R: 3, S: 3, StrideH: 1, StrideW: 1,
		PadH: 1, PadW: 1, DilH: 1, DilW: 1, Groups: 1, OH: c.h, OW: c.w}
}

// dxCases are the tests' shapes: the tile edges (K mod 12, planes of 1,
// 16, 32 pixels and odd vector counts) and a seeded sweep of small ones.
func dxCases(r *rand.Rand, sweep int) []dxCase {
	cs := []dxCase{
		{1, 1, 1, 1, 1}, {2, 1, 1, 1, 1}, {3, 3, 13, 1, 7}, {1, 2, 12, 4, 4}, {2, 5, 24, 4, 4},
		{3, 4, 25, 4, 8}, {1, 9, 11, 16, 16}, {2, 8, 12, 32, 32}, {3, 7, 1, 3, 3}, {2, 6, 7, 9, 9},
		{1, 3, 5, 16, 1}, {2, 2, 3, 1, 16}, {1, 1, 12, 32, 1}, {3, 9, 25, 5, 7}, {2, 64, 12, 4, 4},
	}
	sides := []int{1, 2, 3, 4, 5, 6, 7, 8, 9, 16, 32}
	for range sweep {
		cs = append(cs, dxCase{1 + r.Intn(3), 1 + r.Intn(9), 1 + r.Intn(25),
			sides[r.Intn(len(sides))], sides[r.Intn(len(sides))]})
	}
	return cs
}

// dxOperands are seeded bfloat16 x and w for p.
func dxOperands(r *rand.Rand, p ConvArgs) (x, w []uint16) {
	x = make([]uint16, p.N*p.C*p.H*p.W)
	w = make([]uint16, p.K*p.C*9)
	for i := range x {
		x[i] = uint16(math.Float32bits(float32(r.NormFloat64())) >> 16)
	}
	for i := range w {
		w[i] = uint16(math.Float32bits(float32(r.NormFloat64()*0.2)) >> 16)
	}
	return x, w
}

// runDX runs the direct convolution of p with kern and pb pairs per pass
// into a fresh y, its workspace poisoned with NaN.
func runDX(p ConvArgs, x, w []uint16, kern dxKernel, pb int) []float32 {
	y := make([]float32, p.N*p.K*p.H*p.W)
	for i := range y {
		y[i] = float32(math.NaN())
	}
	ws := make([]float32, newDXPlan(p, pb, false).words())
	for i := range ws {
		ws[i] = float32(math.NaN())
	}
	convDirectWith(p, ConvOut{F: y}, x, w, ws, kern, pb)
	return y
}

// bf is bfloat16 bits v as a float64.
func bf(v uint16) float64 { return float64(math.Float32frombits(uint32(v) << 16)) }

// dxReference is the convolution of the bfloat16 values in float64 and
// Σ|w||x| per output.
func dxReference(p ConvArgs, x, w []uint16) (ref, mag []float64) {
	hw := p.H * p.W
	ref, mag = make([]float64, p.N*p.K*hw), make([]float64, p.N*p.K*hw)
	for n := range p.N {
		for k := range p.K {
			for oh := range p.H {
				for ow := range p.W {
					var s, m float64
					for c := range p.C {
						for t := range 9 {
							ih, iw := oh+t/3-1, ow+t%3-1
							if ih < 0 || iw < 0 || ih >= p.H || iw >= p.W {
								continue
							}
							v := bf(w[(k*p.C+c)*9+t]) * bf(x[(n*p.C+c)*hw+ih*p.W+iw])
							s, m = s+v, m+math.Abs(v)
						}
					}
					o := (n*p.K+k)*hw + oh*p.W + ow
					ref[o], mag[o] = s, m
				}
			}
		}
	}
	return ref, mag
}

// TestConvDirectTwin checks the assembly kernel against its Go twin bit
// for bit, with one pass and with passes of two pairs.
func TestConvDirectTwin(t *testing.T) {
	asm := dxAsm()
	if asm == nil {
		t.Skip("no AVX512_BF16 assembly")
	}
	r := rand.New(rand.NewSource(16))
	for _, c := range dxCases(r, 60) {
		p := c.args()
		x, w := dxOperands(r, p)
		for _, pb := range []int{2, dxPairs} {
			got := runDX(p, x, w, asm, pb)
			want := runDX(p, x, w, convDXGo, pb)
			for i := range want {
				if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
					t.Fatalf("%+v pb=%d: y[%d] = %v (asm), %v (twin)", c, pb, i, got[i], want[i])
				}
			}
		}
	}
}

// TestConvDirectReference checks the default kernel against the float64
// convolution of the bfloat16 values, within 16·2⁻²⁴·Σ|w||x| per output.
func TestConvDirectReference(t *testing.T) {
	r := rand.New(rand.NewSource(17))
	for _, c := range dxCases(r, 30) {
		p := c.args()
		x, w := dxOperands(r, p)
		ref, mag := dxReference(p, x, w)
		for _, pb := range []int{1, dxPairs} {
			y := runDX(p, x, w, dxBest(), pb)
			for i := range ref {
				if d := math.Abs(float64(y[i]) - ref[i]); !(d <= 16*0x1p-24*mag[i]) {
					t.Fatalf("%+v pb=%d: y[%d] = %v, want %v ± %g", c, pb, i, y[i], ref[i], 16*0x1p-24*mag[i])
				}
			}
		}
	}
}

// TestConvDirectWorkspace checks that a short ws panics naming the
// function and both sizes, and that a warm call does not allocate.
func TestConvDirectWorkspace(t *testing.T) {
	p := dxCase{3, 5, 14, 6, 6}.args()
	r := rand.New(rand.NewSource(18))
	x, w := dxOperands(r, p)
	y := make([]float32, p.N*p.K*p.H*p.W)
	need := convDirectBF16Words(p, false)
	func() {
		defer func() {
			msg := fmt.Sprint(recover())
			if !strings.Contains(msg, "convDirectBF16") || !strings.Contains(msg, fmt.Sprint(need)) ||
				!strings.Contains(msg, fmt.Sprint(need-1)) {
				t.Errorf("short ws: panic %q, want one naming convDirectBF16, %d and %d", msg, need-1, need)
			}
		}()
		convDirectBF16(p, ConvOut{F: y}, x, w, make([]float32, need-1))
	}()
	ws := make([]float32, need)
	f := func() { convDirectBF16(p, ConvOut{F: y}, x, w, ws) }
	f()
	if n := testing.AllocsPerRun(20, f); n != 0 {
		t.Errorf("convDirectBF16 allocates %v times per warm call", n)
	}
}

// TestConvDirectPack checks the filter packer's pair loop (assembly where
// there is one) against packPairsGo word for word.
func TestConvDirectPack(t *testing.T) {
	r := rand.New(rand.NewSource(19))
	for _, np := range []int{1, 2, 3, 7, 32, 33} {
		w := make([]uint16, 18*np)
		for i := range w {
			w[i] = uint16(r.Uint32())
		}
		st := np * dxMR
		got, want := make([]uint32, 9*st), make([]uint32, 9*st)
		for i := range got {
			got[i], want[i] = 7, 7
		}
		dxPackPairs(got, w, np, st)
		packPairsGo(want, w, np, st)
		for i := range want {
			if got[i] != want[i] {
				t.Fatalf("np=%d: blk[%d] = %#x, want %#x", np, i, got[i], want[i])
			}
		}
	}
}

// dxGradInputRef is the input gradient of the 3×3 "same" convolution p of
// bfloat16 dy by w in float64, and Σ|w||dy| per element: dxReference of
// dy by the rotated, K↔C-transposed filters (written out here, not by
// flipFilters).
func dxGradInputRef(p ConvArgs, dy, w []uint16) (ref, mag []float64) {
	wf := make([]uint16, len(w))
	for k := range p.K {
		for c := range p.C {
			for t := range 9 {
				wf[(c*p.K+k)*9+8-t] = w[(k*p.C+c)*9+t]
			}
		}
	}
	return dxReference(dxCase{p.N, p.K, p.C, p.H, p.W}.args(), dy, wf)
}

// TestConv2dHalfDirectRoute checks the route through Conv2dHalf and
// Conv2dGradInputHalf: where useDirect takes a shape (AVX512_BF16 without
// AMX), a bfloat16 y is convDirectBF16's float32 result rounded once, bit
// for bit; with the route on and off, the forward convolution and the
// input gradient (flipped onto the route at N·H·W ≥ 4096) are within
// 16·2⁻²⁴·Σ|w||x| of the float64 reference, in the workspace
// ConvWorkspace gives (unchanged by the route).
func TestConv2dHalfDirectRoute(t *testing.T) {
	defer func(on bool) { convDirectOn = on }(convDirectOn)
	r := rand.New(rand.NewSource(17))
	kn := pairKernel(9 * 16)
	for _, c := range []dxCase{{2, 16, 20, 8, 8}, {3, 17, 13, 9, 9}, {4, 16, 16, 32, 32}} {
		p := c.args()
		x, w := dxOperands(r, p)
		convDirectOn = true
		want := dxAsm() != nil && kn != nil && !kn.amx
		if got := useDirect(p, ConvOut{}, Half16{BF16: true}, Half16{BF16: true}); got != want {
			t.Fatalf("%+v: useDirect %v, want %v (AVX512_BF16 %v, pair kernel %v)", p, got, want, dxAsm() != nil, kn != nil)
		}
		if want {
			f := runDX(p, x, w, dxBest(), dxPairs)
			hy := make([]uint16, len(f))
			Conv2dHalf(p, ConvOut{H: Half16{Bits: hy, BF16: true}}, Half16{Bits: x, BF16: true}, Half16{Bits: w, BF16: true},
				make([]float32, ConvWorkspace(ConvForward, p, ConvHalf)))
			for i, v := range f {
				bits := math.Float32bits(v) // finite: round to nearest even
				if b := uint16((bits + 0x7FFF + bits>>16&1) >> 16); hy[i] != b {
					t.Fatalf("%+v: y[%d] = %#04x, want %#04x (%v rounded once)", p, i, hy[i], b, v)
				}
			}
		}
		ref, mag := dxReference(p, x, w)
		var dy []uint16
		for range p.N * p.K * p.H * p.W {
			dy = append(dy, uint16(math.Float32bits(float32(r.NormFloat64()))>>16))
		}
		gref, gmag := dxGradInputRef(p, dy, w)
		for _, on := range []bool{true, false} {
			convDirectOn = on
			y, dx := make([]float32, len(ref)), make([]float32, len(gref))
			Conv2dHalf(p, ConvOut{F: y}, Half16{Bits: x, BF16: true}, Half16{Bits: w, BF16: true},
				make([]float32, ConvWorkspace(ConvForward, p, ConvHalf)))
			Conv2dGradInputHalf(p, ConvOut{F: dx}, Half16{Bits: dy, BF16: true}, Half16{Bits: w, BF16: true},
				make([]float32, ConvWorkspace(ConvGradInput, p, ConvHalf)))
			for i := range ref {
				if e := math.Abs(float64(y[i]) - ref[i]); e > 16*0x1p-24*mag[i] {
					t.Fatalf("%+v, route %v: y[%d] = %v, want %v ± %.3g", p, on, i, y[i], ref[i], 16*0x1p-24*mag[i])
				}
			}
			for i := range gref {
				if e := math.Abs(float64(dx[i]) - gref[i]); e > 16*0x1p-24*gmag[i] {
					t.Fatalf("%+v, route %v: dx[%d] = %v, want %v ± %.3g", p, on, i, dx[i], gref[i], 16*0x1p-24*gmag[i])
				}
			}
		}
	}
}
