package kernels

import (
	"math/rand/v2"
	"testing"
)

// TestGeluTanhBF16MatchesTiles: the bfloat16 GELU and its gradient equal
// widen → float32 kernel (UnaryFlat, UnaryGrad) → narrow bit for bit, over
// every bfloat16 pattern as x (and a shifted copy as dy), and on every
// length up to 40 (each loop and tail), on every path.
func TestGeluTanhBF16MatchesTiles(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	a := halfPatternsAll(r, 1<<17+5) // over vecParallelMin: split across workers
	b := append(a[4099:], a[:4099]...)
	n := len(a)
	c := halfCases[0]
	forEachPath(t, func(t *testing.T) {
		for m := 1; m <= 40; m++ { // every loop and tail length
			got := make([]uint16, m)
			GeluTanhBF16(got, a[1000:1000+m])
			want := refTiled(c, m, func(d []float32, in [][]float32) { UnaryFlat(UGeluTanh, 0, d, in[0]) }, a[1000:])
			if i := firstDiff16(got, want); i >= 0 {
				t.Errorf("n=%d: GELU(%#04x) = %#04x, want %#04x", m, a[1000+i], got[i], want[i])
			}
			GeluTanhGradBF16(got, b[1000:1000+m], a[1000:1000+m])
			want = refTiled(c, m, func(d []float32, in [][]float32) { UnaryGrad(UGeluTanh, 0, d, in[0], in[1], nil) }, b[1000:], a[1000:])
			if i := firstDiff16(got, want); i >= 0 {
				t.Errorf("n=%d: GELU grad(dy %#04x, x %#04x) = %#04x, want %#04x", m, b[1000+i], a[1000+i], got[i], want[i])
			}
		}
		got := make([]uint16, n)
		GeluTanhBF16(got, a)
		want := refTiled(c, n, func(d []float32, in [][]float32) { UnaryFlat(UGeluTanh, 0, d, in[0]) }, a)
		if i := firstDiff16(got, want); i >= 0 {
			t.Errorf("GELU(%#04x) = %#04x, want %#04x", a[i], got[i], want[i])
		}
		GeluTanhGradBF16(got, b, a)
		want = refTiled(c, n, func(d []float32, in [][]float32) { UnaryGrad(UGeluTanh, 0, d, in[0], in[1], nil) }, b, a)
		if i := firstDiff16(got, want); i >= 0 {
			t.Errorf("GELU grad(dy %#04x, x %#04x) = %#04x, want %#04x", b[i], a[i], got[i], want[i])
		}
	})
}
