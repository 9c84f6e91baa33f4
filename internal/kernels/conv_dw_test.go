package kernels

import (
	"fmt"
	"math"
	"math/rand"
	"strings"
	"testing"
)

// dwCases are dxCases with shapes for the weight gradient's blocks: input
// channels past one 32-channel block and not a multiple of it, output
// channels with a 6-row last block and a 12-row one, planes whose depth
// spans several dwKC chunks, odd batches (a half-empty last pair).
func dwCases(r *rand.Rand, sweep int) []dxCase {
	return append(dxCases(r, sweep),
		dxCase{5, 40, 30, 6, 10}, dxCase{2, 33, 7, 3, 5}, dxCase{3, 64, 64, 16, 16},
		dxCase{1, 32, 20, 32, 32}, dxCase{4, 70, 13, 8, 8})
}

// dwTwin is the Go twin of the pair kernel the route runs on (sbgemm's
// blocking; its six-row edge kernel included).
func dwTwin() *gemmKernel[float32] {
	base := sbgemm
	if base == nil {
		base = &gemmKernel[float32]{mr: 12, nr: 32, mc: 240, kc: 384, nc: 2048, pairs: true}
	}
	g := goPairKernel(base)
	g.half = sbgemmGoHalf
	return g
}

// runDW runs the direct weight gradient of p on kn into a fresh float32
// dw, its workspace poisoned with NaN.
func runDW(p ConvArgs, dy, x []uint16, kn *gemmKernel[float32]) []float32 {
	dw := make([]float32, p.K*p.C*9)
	ws := make([]float32, convDirectWGradWords(p, 2))
	for i := range ws {
		ws[i] = float32(math.NaN())
	}
	convDirectWGradWith(p, ConvOut{F: dw}, dy, x, ws, kn)
	return dw
}

// dwReference is the weight gradient of the bfloat16 values in float64
// and Σ|dy||x| per weight.
func dwReference(p ConvArgs, dy, x []uint16) (ref, mag []float64) {
	hw := p.H * p.W
	ref, mag = make([]float64, p.K*p.C*9), make([]float64, p.K*p.C*9)
	for k := range p.K {
		for c := range p.C {
			for t := range 9 {
				var s, m float64
				for n := range p.N {
					for oh := range p.H {
						for ow := range p.W {
							ih, iw := oh+t/3-1, ow+t%3-1
							if ih < 0 || iw < 0 || ih >= p.H || iw >= p.W {
								continue
							}
							v := bf(dy[(n*p.K+k)*hw+oh*p.W+ow]) * bf(x[(n*p.C+c)*hw+ih*p.W+iw])
							s, m = s+v, m+math.Abs(v)
						}
					}
				}
				ref[(k*p.C+c)*9+t], mag[(k*p.C+c)*9+t] = s, m
			}
		}
	}
	return ref, mag
}

// dwBound is the float32 error bound of the route's sums: each sum adds
// two exact products per position, serially over every pair's depth, so
// at most 2·pairs·H·(W+2) roundings of 2⁻²⁴ of Σ|terms| each.
func dwBound(p ConvArgs) float64 {
	d := newDWPlan(p, 0)
	return float64(2*d.pairs*d.d) * 0x1p-24
}

// TestConvDirectWGradReference checks the route on the Go twin (and the
// assembly kernel where there is one) against the float64 weight gradient
// of the bfloat16 values.
func TestConvDirectWGradReference(t *testing.T) {
	r := rand.New(rand.NewSource(21))
	kns := []*gemmKernel[float32]{dwTwin()}
	if sbgemm != nil {
		kns = append(kns, sbgemm)
	}
	for _, c := range dwCases(r, 30) {
		p := c.args()
		xs, _ := dxOperands(r, p)
		dy, _ := dxOperands(r, ConvArgs{N: p.N, C: p.K, H: p.H, W: p.W})
		ref, mag := dwReference(p, dy, xs)
		tol := dwBound(p)
		for _, kn := range kns {
			dw := runDW(p, dy, xs, kn)
			for i := range ref {
				if d := math.Abs(float64(dw[i]) - ref[i]); !(d <= tol*mag[i]) {
					t.Fatalf("%+v %s: dw[%d] = %v, want %v ± %g", c, kn.name, i, dw[i], ref[i], tol*mag[i])
				}
			}
		}
	}
}

// TestConvDirectWGradTwin checks the assembly pair kernel's route against
// the Go twin's bit for bit, and the 16-bit dw against the float32 one
// rounded.
func TestConvDirectWGradTwin(t *testing.T) {
	r := rand.New(rand.NewSource(22))
	for _, c := range dwCases(r, 40) {
		p := c.args()
		x, _ := dxOperands(r, p)
		dy, _ := dxOperands(r, ConvArgs{N: p.N, C: p.K, H: p.H, W: p.W})
		want := runDW(p, dy, x, dwTwin())
		if sbgemm != nil {
			got := runDW(p, dy, x, sbgemm)
			for i := range want {
				if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
					t.Fatalf("%+v: dw[%d] = %v (asm), %v (twin)", c, i, got[i], want[i])
				}
			}
		}
		h := Half16{Bits: make([]uint16, len(want)), BF16: true}
		ws := make([]float32, convDirectWGradWords(p, 2))
		convDirectWGradWith(p, ConvOut{H: h}, dy, x, ws, dwTwin())
		round := make([]uint16, len(want))
		f32ToBF16(round, want)
		for i := range round {
			if h.Bits[i] != round[i] {
				t.Fatalf("%+v: 16-bit dw[%d] = %#04x, want %#04x (the float32 dw rounded)", c, i, h.Bits[i], round[i])
			}
		}
	}
	if sbgemm == nil {
		t.Log("no AVX512_BF16 pair kernel: the twin only (run scripts/avx512-emu.sh for the assembly)")
	}
}

// TestConvDirectWGradWorkspace checks that a short ws or operand panics
// naming the function and the sizes, and that a warm call does not
// allocate.
func TestConvDirectWGradWorkspace(t *testing.T) {
	p := dxCase{3, 40, 14, 6, 6}.args()
	r := rand.New(rand.NewSource(23))
	x, _ := dxOperands(r, p)
	dy, _ := dxOperands(r, ConvArgs{N: p.N, C: p.K, H: p.H, W: p.W})
	dw := make([]float32, p.K*p.C*9)
	need := convDirectWGradWords(p, 1)
	for name, f := range map[string]func(){
		fmt.Sprint(need - 1): func() { convDirectWGrad(p, ConvOut{F: dw}, dy, x, make([]float32, need-1)) },
		fmt.Sprint(len(dy) - 1): func() {
			convDirectWGrad(p, ConvOut{F: dw}, dy[:len(dy)-1], x, make([]float32, need))
		},
	} {
		func() {
			defer func() {
				msg := fmt.Sprint(recover())
				if !strings.Contains(msg, "convDirectWGrad") || !strings.Contains(msg, name) {
					t.Errorf("panic %q, want one naming convDirectWGrad and %s", msg, name)
				}
			}()
			f()
		}()
	}
	kn := sbgemm
	if kn == nil {
		kn = dwTwin()
	}
	ws := make([]float32, need)
	f := func() { convDirectWGradWith(p, ConvOut{F: dw}, dy, x, ws, kn) }
	f()
	if n := testing.AllocsPerRun(20, f); n != 0 {
		t.Errorf("convDirectWGrad allocates %v times per warm call", n)
	}
}

// TestConv2dGradWeightHalfDirectRoute checks which weight gradients take
// the direct route, and that Conv2dGradWeightHalf gives the float64
// reference within the route's bound on it and off it, into float32 and
// (rounded once) into bfloat16 dw.
func TestConv2dGradWeightHalfDirectRoute(t *testing.T) {
	defer func(on bool) { convDirectOn = on }(convDirectOn)
	convDirectOn = true
	bf := Half16{BF16: true}
	can := sbgemm != nil && amxgemm == nil
	for _, c := range []struct {
		dxCase
		want bool
	}{
		{dxCase{4, 32, 20, 32, 32}, can}, {dxCase{3, 33, 13, 32, 32}, can}, {dxCase{2, 64, 64, 40, 30}, can},
		{dxCase{4, 31, 20, 32, 32}, false}, {dxCase{4, 32, 20, 16, 16}, false}, {dxCase{1, 32, 20, 32, 32}, false},
	} {
		p := c.args()
		if got := useDirectWGrad(p, bf, bf); got != c.want {
			t.Errorf("%+v: useDirectWGrad %v, want %v (pair kernel %v, AMX %v)", c.dxCase, got, c.want, sbgemm != nil, amxgemm != nil)
		}
	}
	r := rand.New(rand.NewSource(24))
	p := dxCase{3, 33, 13, 32, 32}.args()
	x, _ := dxOperands(r, p)
	dy, _ := dxOperands(r, ConvArgs{N: p.N, C: p.K, H: p.H, W: p.W})
	ref, mag := dwReference(p, dy, x)
	tol := dwBound(p)
	hx, hdy := Half16{Bits: x, BF16: true}, Half16{Bits: dy, BF16: true}
	for _, on := range []bool{true, false} {
		convDirectOn = on
		f := make([]float32, len(ref))
		h := Half16{Bits: make([]uint16, len(ref)), BF16: true}
		for _, out := range []ConvOut{{F: f}, {H: h}} {
			Conv2dGradWeightHalf(p, out, hdy, hx, make([]float32, ConvWorkspace(ConvGradWeight, p, ConvHalf)))
		}
		round := make([]uint16, len(f))
		f32ToBF16(round, f)
		for i := range ref {
			if e := math.Abs(float64(f[i]) - ref[i]); !(e <= tol*mag[i]) {
				t.Fatalf("route %v: dw[%d] = %v, want %v ± %.3g", on, i, f[i], ref[i], tol*mag[i])
			}
			if h.Bits[i] != round[i] {
				t.Fatalf("route %v: 16-bit dw[%d] = %#04x, want %#04x", on, i, h.Bits[i], round[i])
			}
		}
	}
}

// TestConvDirectWGradPack checks dwPack (assembly where there is one)
// against dwPackGo word for word: pixel counts across the 16-pixel chunks,
// every row count, both widths and strides, with and without hi.
func TestConvDirectWGradPack(t *testing.T) {
	r := rand.New(rand.NewSource(25))
	for _, n := range []int{1, 5, 15, 16, 17, 32, 33, 64} {
		for _, shape := range [][2]int{{32, 16}, {12, 12}} {
			step, width := shape[0], shape[1]
			for rows := 0; rows <= width; rows++ {
				plane := n + r.Intn(5)
				lo, hi := make([]uint16, width*plane), make([]uint16, width*plane)
				for i := range lo {
					lo[i], hi[i] = uint16(r.Uint32()), uint16(r.Uint32())
				}
				for _, h := range [][]uint16{hi, nil} {
					got, want := make([]uint32, n*step), make([]uint32, n*step)
					for i := range got {
						got[i], want[i] = 7, 7
					}
					dwPack(got, step, width, lo, h, plane, rows, n)
					dwPackGo(want, step, width, lo, h, plane, rows, n)
					for i := range want {
						if got[i] != want[i] {
							t.Fatalf("n=%d step=%d width=%d rows=%d hi=%v: word %d = %#x, want %#x",
								n, step, width, rows, h != nil, i, got[i], want[i])
						}
					}
				}
			}
		}
	}
}
