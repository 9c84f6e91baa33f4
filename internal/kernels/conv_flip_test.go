package kernels

import (
	"math/rand/v2"
	"testing"
)

// TestFlipFilters checks flipFilters against the definition, element by
// element, over every small shape with one and several groups.
func TestFlipFilters(t *testing.T) {
	for _, g := range []int{1, 2, 3} {
		for cg := 1; cg <= 3; cg++ {
			for kg := 1; kg <= 3; kg++ {
				for r := 1; r <= 3; r++ {
					for s := 1; s <= 4; s++ {
						p := ConvArgs{C: g * cg, K: g * kg, R: r, S: s, Groups: g}
						w := make([]uint16, p.K*cg*r*s)
						for i := range w {
							w[i] = uint16(i + 1)
						}
						dst := make([]uint16, len(w))
						flipFilters(&p, dst, w)
						for i, got := range dst {
							// dst index ((gi·cg+c)·kg+k)·r·s + (r-1-ri)·s + (s-1-si)
							si, ri := s-1-i%s, r-1-i/s%r
							k, c, gi := i/(r*s)%kg, i/(r*s*kg)%cg, i/(r*s*kg*cg)
							want := w[(((gi*kg+k)*cg+c)*r+ri)*s+si]
							if got != want {
								t.Fatalf("%+v: dst[%d] = %d, want %d", p, i, got, want)
							}
						}
					}
				}
			}
		}
	}
}

// TestFlipGradInput checks the forward convolution flipGradInput returns
// over the shapes it accepts: its output is the input's shape.
func TestFlipGradInput(t *testing.T) {
	defer func(n int) { convFlipMinCols = n }(convFlipMinCols)
	convFlipMinCols = 0
	rng := rand.New(rand.NewPCG(9, 10))
	shapes := append([]ConvArgs{}, convPathShapes...)
	for range 200 {
		shapes = append(shapes, randConv(rng))
	}
	taken := 0
	for _, p := range shapes {
		p = convShape(p)
		q, ok := p.flipGradInput()
		if !ok {
			continue
		}
		taken++
		if p.StrideH != 1 || p.StrideW != 1 || p.Pointwise() {
			t.Fatalf("%+v: flipped", p)
		}
		got := q
		got.OH, got.OW = 0, 0
		got = convShape(got)
		if got.OH != p.H || got.OW != p.W || q.OH != p.H || q.OW != p.W || q.C != p.K || q.K != p.C {
			t.Fatalf("%+v: flipped to %+v, whose output is %d×%d", p, q, got.OH, got.OW)
		}
	}
	if taken == 0 {
		t.Fatal("no shape takes the flipped route")
	}
}

// TestConv2dGradInputFlipped runs the 16-bit kernels with every stride-1
// bfloat16 input gradient on the flipped route (convFlipMinCols 0, on
// with or without AMX) over
// convPathShapes and random shapes, against the float64 reference as
// TestConv2dHalf does.
func TestConv2dGradInputFlipped(t *testing.T) {
	defer func(n int, on bool) { convFlipMinCols, convFlipGradInput = n, on }(convFlipMinCols, convFlipGradInput)
	convFlipMinCols, convFlipGradInput = 0, true
	settings := []convSetting{{convTile, convPart, convDWSmall}, {1, 1, convDWSmall}}
	forConvShapes(t, rand.New(rand.NewPCG(11, 12)), settings, 30, func(t *testing.T, p ConvArgs, x, w, dy []float64) {
		checkConvHalf(t, p, x, w, dy, true)
	})
}
