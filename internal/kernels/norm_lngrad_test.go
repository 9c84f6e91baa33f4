package kernels

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// lnWide returns n float32 values over 30 binades, both signs.
func lnWide(r *rand.Rand, n int) []float32 {
	v := make([]float32, n)
	for i := range v {
		v[i] = float32((2*r.Float64() - 1) * math.Exp2(float64(r.IntN(30)-15)))
	}
	return v
}

// lnSizes are row lengths 1 to 70 (every tail of the AVX2 loops' groups
// of 8 and 16), 256 and 768.
func lnSizes() []int {
	sizes := []int{256, 768}
	for n := 1; n <= 70; n++ {
		sizes = append(sizes, n)
	}
	return sizes
}

// TestLayerNormRowAsm compares layerNormRow with w and b on float32 rows
// (lnSizes, values over 30 binades) bit for bit with the Go loop alone
// (CPU features off).
func TestLayerNormRowAsm(t *testing.T) {
	if !CPU.AVX2FMA {
		t.Skip("no AVX2 loops on this CPU")
	}
	r := rand.New(rand.NewPCG(73, 74))
	for _, n := range lnSizes() {
		x, w, b := lnWide(r, n), lnWide(r, n), lnWide(r, n)
		mu, is := float64(x[0])/3, 1/(0.5+r.Float64())
		got, want := make([]float32, n), make([]float32, n)
		layerNormRow(got, x, w, b, mu, is)
		saved := CPU
		CPU = Features{}
		layerNormRow(want, x, w, b, mu, is)
		CPU = saved
		for i := range got {
			if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
				t.Fatalf("n=%d: y[%d] = %g, Go loop %g", n, i, got[i], want[i])
			}
		}
	}
}

// TestLayerNormGradRowAsm runs layerNormGradRow on float32 rows of 1 to
// 70 and of 256 and 768 values (the AVX2 loops' groups of 16 and 8 and
// every tail), values over many binades, with and without w, aw and dx,
// and compares dx, aw and ab bit for bit with the same row on the Go
// loops alone (CPU features off).
func TestLayerNormGradRowAsm(t *testing.T) {
	if !CPU.AVX2FMA {
		t.Skip("no AVX2 loops on this CPU")
	}
	r := rand.New(rand.NewPCG(71, 72))
	wide := func(n int) []float32 { return lnWide(r, n) }
	for _, n := range lnSizes() {
		for v := range 4 { // all; w nil; aw nil; dx nil
			dy, x, w := wide(n), wide(n), wide(n)
			if v == 1 {
				w = nil
			}
			mu, is := float64(x[0])/3, 1/(0.5+r.Float64())
			aw0, ab0 := make([]float64, n), make([]float64, n)
			for i := range aw0 {
				aw0[i], ab0[i] = r.NormFloat64(), r.NormFloat64()
			}
			run := func(asm bool) (dx []float32, aw, ab []float64) {
				saved := CPU
				if !asm {
					CPU = Features{}
				}
				defer func() { CPU = saved }()
				if v != 2 {
					aw, ab = append([]float64(nil), aw0...), append([]float64(nil), ab0...)
				}
				if v != 3 {
					dx = make([]float32, n)
				}
				layerNormGradRow(dx, dy, x, w, aw, ab, mu, is)
				return dx, aw, ab
			}
			gx, gw, gb := run(true)
			wx, ww, wb := run(false)
			name := fmt.Sprintf("n=%d variant=%d", n, v)
			for i := range gx {
				if math.Float32bits(gx[i]) != math.Float32bits(wx[i]) {
					t.Fatalf("%s: dx[%d] = %g, Go loop %g", name, i, gx[i], wx[i])
				}
			}
			for i := range gw {
				if math.Float64bits(gw[i]) != math.Float64bits(ww[i]) || math.Float64bits(gb[i]) != math.Float64bits(wb[i]) {
					t.Fatalf("%s: aw, ab[%d] = %g, %g, Go loop %g, %g", name, i, gw[i], gb[i], ww[i], wb[i])
				}
			}
		}
	}
}
