package kernels

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/headroom-ml/headroom/dtype"
)

// amxTilesGo is the Go twin of the AMX kernel's tiles, tile by tile as
// the driver's per-tile path computes them: A read in place is packed by
// packAAMX, a bias start is mode 1 from a C holding the bias in every
// row, and out is dtype.BF16FromF32 of the finished tile.
func amxTilesGo(t tileRun[float32]) {
	for i := range t.n {
		r0, c0 := 32*i, 0 // the tile's corner
		if t.across {
			r0, c0 = 0, 32*i
		}
		var panel []float32
		if t.h != nil {
			panel = make([]float32, 32*t.k)
			packAAMX(panel, t.h, t.at+r0*t.ld, t.ld, false, 0, 32, 0, t.k)
		} else {
			panel = t.a[r0*t.k : (r0+32)*t.k]
		}
		tile, ld, mode := make([]float32, 32*32), 32, t.mode
		if t.c != nil {
			tile, ld = t.c[r0*t.ldc+c0:], t.ldc
		}
		if t.bias != nil {
			for r := range 32 {
				copy(tile[r*ld:r*ld+32], t.bias[c0:c0+32])
			}
			mode = 1
		}
		amxGo(t.k, panel, t.b[c0*t.k:], tile, ld, t.beta, mode)
		if t.out == nil {
			continue
		}
		for r := range 32 {
			for x := range 32 {
				t.out[t.oat+(r0+r)*t.ldo+c0+x] = dtype.BF16FromF32(tile[r*ld+x])
			}
		}
	}
}

// TestAMXTiles runs the kernel's tiles (1, 2, 3 and 8 tiles in one call,
// down a column and across a row) with A packed and read in place, every mode, a bias start, and
// tiles narrowed to bfloat16 from C or without C, on values over 24
// binades, and compares the whole of C and out, padding included (what
// the column must not write), bit for bit with the Go twin.
func TestAMXTiles(t *testing.T) {
	kn := amxOrSkip(t)
	r := rand.New(rand.NewPCG(61, 62))
	for _, n := range []int{1, 2, 3, 8} {
		for _, k := range []int{32, 64, 96, 256} {
			for _, across := range []bool{false, true} {
				for _, inPlace := range []bool{false, true} {
					for v := range 6 { // mode 0, 1, 2; bias; bias without C; mode 0 without C
						name := fmt.Sprintf("n=%d/k=%d/across=%v/inplace=%v/variant=%d", n, k, across, inPlace, v)
						checkAMXTiles(t, kn, r, name, n, k, across, inPlace, v)
					}
				}
			}
		}
	}
}

// checkAMXTiles is one case of TestAMXTiles.
func checkAMXTiles(t *testing.T, kn *gemmKernel[float32], r *rand.Rand, name string, n, k int, across, inPlace bool, v int) {
	t.Helper()
	rows, cols := 32*n, 32 // C's, and B panels
	if across {
		rows, cols = 32, 32*n
	}
	ldc, ldo, oat := cols+r.IntN(9), cols+r.IntN(9), r.IntN(5)
	col := tileRun[float32]{n: n, k: k, across: across, b: amxWide(r, cols*k), ldc: ldc, mode: []int{0, 1, 2, 0, 0, 0}[v], beta: -0.3,
		tmp: make([]float32, 32*32)}
	if inPlace {
		col.ld = k + r.IntN(40)
		col.at = r.IntN(7)
		col.h = words16(amxWide(r, (col.at+rows*col.ld+1)/2))
	} else {
		col.a = amxWide(r, rows*k)
	}
	if v >= 3 && v <= 4 {
		col.bias = gemmToT[float32](gemmRand(r, cols))
	}
	c0 := gemmToT[float32](gemmRand(r, rows*ldc))
	out0 := make([]uint16, oat+rows*ldo)
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
	kn.tiles(got)
	amxTilesGo(want)
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

// TestGemmHalfAMXAllocs checks that a product on the AMX kernel's rows of
// tiles, with a bias and a bfloat16 C, allocates nothing in steady state.
func TestGemmHalfAMXAllocs(t *testing.T) {
	amxOrSkip(t)
	r := rand.New(rand.NewPCG(63, 64))
	g, ah, bh, c := bf16CaseInputs(r, gemmCase{m: 256, n: 256, k: 256, alpha: 1, batch: 1})
	bias := gemmToT[float32](gemmRand(r, 256))
	out := make([]uint16, len(c))
	GemmHalfBF16(g, ah, bh, true, true, bias, c, out)
	if allocs := testing.AllocsPerRun(10, func() { GemmHalfBF16(g, ah, bh, true, true, bias, c, out) }); allocs != 0 {
		t.Errorf("GemmHalfBF16 256³ on AMX allocates %v times per call, want 0", allocs)
	}
}
