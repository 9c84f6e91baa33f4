package kernels

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/headroom-ml/headroom/dtype"
)

// amxColumnGo is the Go twin of the AMX kernel's column, tile by tile as
// the driver's per-tile path computes it: A read in place is packed by
// packAAMX, a bias start is mode 1 from a C holding the bias in every
// row, and out is dtype.BF16FromF32 of the finished tile.
func amxColumnGo(t tileColumn[float32]) {
	for i := range t.n {
		var panel []float32
		if t.h != nil {
			panel = make([]float32, 32*t.k)
			packAAMX(panel, t.h, t.at+i*32*t.ld, t.ld, false, 0, 32, 0, t.k)
		} else {
			panel = t.a[i*32*t.k : (i+1)*32*t.k]
		}
		tile, ld, mode := make([]float32, 32*32), 32, t.mode
		if t.c != nil {
			tile, ld = t.c[i*32*t.ldc:], t.ldc
		}
		if t.bias != nil {
			for r := range 32 {
				copy(tile[r*ld:r*ld+32], t.bias[:32])
			}
			mode = 1
		}
		amxGo(t.k, panel, t.b, tile, ld, t.beta, mode)
		if t.out == nil {
			continue
		}
		for r := range 32 {
			for x := range 32 {
				t.out[t.oat+(i*32+r)*t.ldo+x] = dtype.BF16FromF32(tile[r*ld+x])
			}
		}
	}
}

// TestAMXColumn runs the kernel's column (1, 2, 3 and 8 tiles in one
// call) with A packed and read in place, every mode, a bias start, and
// tiles narrowed to bfloat16 from C or without C, on values over 24
// binades, and compares the whole of C and out, padding included (what
// the column must not write), bit for bit with the Go twin.
func TestAMXColumn(t *testing.T) {
	kn := amxOrSkip(t)
	r := rand.New(rand.NewPCG(61, 62))
	for _, n := range []int{1, 2, 3, 8} {
		for _, k := range []int{32, 64, 96, 256} {
			for _, inPlace := range []bool{false, true} {
				for v := range 6 { // mode 0, 1, 2; bias; bias without C; mode 0 without C
					name := fmt.Sprintf("n=%d/k=%d/inplace=%v/variant=%d", n, k, inPlace, v)
					checkAMXColumn(t, kn, r, name, n, k, inPlace, v)
				}
			}
		}
	}
}

// checkAMXColumn is one case of TestAMXColumn.
func checkAMXColumn(t *testing.T, kn *gemmKernel[float32], r *rand.Rand, name string, n, k int, inPlace bool, v int) {
	t.Helper()
	ldc, ldo, oat := 32+r.IntN(9), 32+r.IntN(9), r.IntN(5)
	col := tileColumn[float32]{n: n, k: k, b: amxWide(r, 512*amxSteps(k)), ldc: ldc, mode: []int{0, 1, 2, 0, 0, 0}[v], beta: -0.3,
		tmp: make([]float32, 32*32)}
	if inPlace {
		col.ld = k + r.IntN(40)
		col.at = r.IntN(7)
		col.h = words16(amxWide(r, (col.at+32*n*col.ld+1)/2))
	} else {
		col.a = amxWide(r, 32*k*n)
	}
	if v >= 3 && v <= 4 {
		col.bias = gemmToT[float32](gemmRand(r, 32))
	}
	c0 := gemmToT[float32](gemmRand(r, 32*n*ldc))
	out0 := make([]uint16, oat+32*n*ldo)
	for i := range out0 {
		out0[i] = uint16(r.Uint32())
	}
	got, want := col, col
	got.c, want.c = append([]float32(nil), c0...), append([]float32(nil), c0...)
	if v >= 2 { // narrow too
		got.out, want.out = append([]uint16(nil), out0...), append([]uint16(nil), out0...)
		got.oat, want.oat, got.ldo, want.ldo = oat, oat, ldo, ldo
	}
	if v >= 4 {
		got.c, want.c = nil, nil
	}
	kn.column(got)
	amxColumnGo(want)
	for i := range got.c {
		if math.Float32bits(got.c[i]) != math.Float32bits(want.c[i]) {
			t.Fatalf("%s: c[%d][%d] = %g, Go twin %g (was %g)", name, i/ldc, i%ldc, got.c[i], want.c[i], c0[i])
		}
	}
	for i := range got.out {
		if got.out[i] != want.out[i] {
			t.Fatalf("%s: out[%d] = %#04x, Go twin %#04x (was %#04x)", name, i, got.out[i], want.out[i], out0[i])
		}
	}
}
