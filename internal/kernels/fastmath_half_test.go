package kernels

import (
	"math/rand/v2"
	"testing"
)

// TestGeluTanhBF16MatchesTiles: the bfloat16 GELU and its gradient equal
// widen → float32 kernel (UnaryFlat, UnaryGrad) → narrow bit for bit, over
// every bfloat16 pattern as x (and a shifted copy as dy), on every path.
func TestGeluTanhBF16MatchesTiles(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	a := halfPatternsAll(r, 1<<17+5) // over vecParallelMin: split across workers
	b := append(a[4099:], a[:4099]...)
	n := len(a)
	c := halfCases[0]
	forEachPath(t, func(t *testing.T) {
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
