package kernels

import (
	"fmt"
	"math"
	"math/rand/v2"
	"sync/atomic"
	"testing"
)

// TestSgemmTiles runs each float32 kernel's tiles that is not the AMX
// kernel's (1, 2, 3 and 7 tiles in one call, down a column and across a
// row, depths with and without a tail of 4, every mode) and compares the
// whole of C, padding included (what the run must not write), bit for
// bit with one full call per tile.
func TestSgemmTiles(t *testing.T) {
	kerns := tileKernels()
	if len(kerns) == 0 {
		t.Skipf("the float32 kernel %s has no runs of tiles", sgemm.name)
	}
	r := rand.New(rand.NewPCG(66, 67))
	for _, kn := range kerns {
		for _, n := range []int{1, 2, 3, 7} {
			for _, k := range []int{0, 1, 3, 4, 5, 64, 255, 256} {
				for _, across := range []bool{false, true} {
					for mode, beta := range []float32{0, 1, -0.625} {
						name := fmt.Sprintf("%s n=%d k=%d across=%v mode=%d", kn.name, n, k, across, mode)
						checkSgemmTiles(t, kn, r, name, n, k, across, mode, beta)
					}
				}
			}
		}
	}
}

// tileKernels lists the float32 assembly kernels of this machine that
// have runs of tiles, the AMX kernel aside (gemm_amx_tiles_test.go).
func tileKernels() []gemmKernel[float32] {
	asm, _ := sgemmAsmKernels()
	var ks []gemmKernel[float32]
	for _, kn := range asm {
		if kn.tiles != nil {
			ks = append(ks, kn)
		}
	}
	return ks
}

// checkSgemmTiles is one case of TestSgemmTiles.
func checkSgemmTiles(t *testing.T, kn gemmKernel[float32], r *rand.Rand, name string, n, k int, across bool, mode int, beta float32) {
	t.Helper()
	mr, nr := kn.mr, kn.nr
	arows, bcols := mr*n, nr // the rows of the A panels, the columns of the B panels
	rows, cols := mr*n, nr   // C's
	if across {
		arows, bcols, rows, cols = mr, nr*n, mr, nr*n
	}
	ldc := cols + 1 + r.IntN(9)
	run := tileRun[float32]{n: n, k: k, across: across, a: gemmToT[float32](gemmRand(r, arows*k)),
		b: gemmToT[float32](gemmRand(r, bcols*k)), ldc: ldc, beta: beta, mode: mode}
	c0 := gemmToT[float32](gemmRand(r, rows*ldc+3))
	got, want := append([]float32(nil), c0...), append([]float32(nil), c0...)
	run.c = got
	kn.tiles(run)
	for i := range n {
		a, b, at := run.a, run.b, 0
		if across {
			b, at = run.b[i*nr*k:], i*nr
		} else {
			a, at = run.a[i*mr*k:], i*mr*ldc
		}
		kn.full(k, a, b, want[at:], ldc, beta, mode)
	}
	for i := range got {
		if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
			t.Fatalf("%s: c[%d][%d] = %g, tile by tile %g (was %g)", name, i/ldc, i%ldc, got[i], want[i], c0[i])
		}
	}
}

// TestGemmTileRunsMatchPerTile runs products through the public entries
// (Gemm, GemmBias, GemmHalf, GemmHalfBF16, the F32 convolutions) with
// the float32 kernel's runs of tiles down columns (its default) and
// across rows, and checks every result bit for bit against the per-tile
// path (gemmTileRuns off): random shapes not multiples of the tile,
// depths of several kc slices, beta 0, 1 and other, both transposes,
// batches, a bias. It also checks that the runs were taken.
func TestGemmTileRunsMatchPerTile(t *testing.T) {
	if sgemm.tiles == nil || sgemm.amx {
		t.Skipf("the float32 kernel %s has no runs of tiles", sgemm.name)
	}
	base := sgemm
	defer func() { sgemm, gemmTileRuns = base, true }()
	var calls atomic.Int64 // the workers run tiles at once
	counted := func(t tileRun[float32]) { calls.Add(1); base.tiles(t) }
	r := rand.New(rand.NewPCG(68, 69))
	for i, f := range tileRunCases(r) {
		gemmTileRuns = false
		want := f()
		for _, down := range []bool{true, false} {
			sgemm, gemmTileRuns = base, true
			sgemm.tiles, sgemm.tilesDown = counted, down
			before := calls.Load()
			got := f()
			sgemm = base
			if calls.Load() == before {
				t.Errorf("case %d down=%v: no run of tiles taken", i, down)
			}
			for x := range got {
				if math.Float32bits(got[x]) != math.Float32bits(want[x]) {
					t.Fatalf("case %d down=%v: result[%d] = %g, per tile %g", i, down, x, got[x], want[x])
				}
			}
		}
	}
}

// tileRunCases returns closures that each compute one product from fixed
// inputs into a fresh output, returned as float32s: random Gemm shapes
// first, then GemmHalf, GemmHalfBF16 and the three convolution passes,
// then GemmBias. Every case takes runs of tiles.
func tileRunCases(r *rand.Rand) []func() []float32 {
	var fs []func() []float32
	for i := range 18 {
		tc := gemmCase{ta: i%2 == 1, tb: i%3 == 1, m: 6 + r.IntN(150), n: 16 + r.IntN(200), k: 1 + r.IntN(700),
			alpha: []float64{1, -1.5}[i%2], beta: []float64{0, 1, -0.7}[i%3], batch: 1 + 2*(i%4/3),
			pad: [3]int{i % 3, i % 2, 1 + i%4}, off: [3]int{1, 2, 3}}
		if i == 0 { // big enough to share out over workers, columns split
			tc.m, tc.n, tc.k = 60, 1500, 300
		}
		fs = append(fs, gemmClosure(r, tc, false))
	}
	half := gemmCase{m: 50, n: 70, k: 530, alpha: 0.5, beta: 0.25, batch: 1, pad: [3]int{1, 2, 3}}
	fs = append(fs, halfClosure(r, half, false), halfClosure(r, half, true))
	p := conv3x3(2, 9, 20, 24, 1)
	x, w, dy := benchF32(r, p.N*p.C*p.H*p.W), benchF32(r, p.K*p.C*9), benchF32(r, p.N*p.K*p.OH*p.OW)
	ws := make([]float32, convMaxWS(p))
	fs = append(fs,
		func() []float32 { y := make([]float32, len(dy)); Conv2d(p, y, x, w, ws); return y },
		func() []float32 { dx := make([]float32, len(x)); Conv2dGradInput(p, dx, dy, w, ws); return dx },
		func() []float32 { dw := make([]float32, len(w)); Conv2dGradWeight(p, dw, dy, x, ws); return dw },
		gemmClosure(r, gemmCase{m: 40, n: 90, k: 300, alpha: 1, beta: 0.5, batch: 1}, false))
	for i, beta := range []float64{0, 1, 0.5} { // with a bias: down columns in every slice, across in later ones
		tc := gemmCase{tb: i == 1, m: 40 + 7*i, n: 90 - 5*i, k: 300, alpha: 1, beta: beta, batch: 1 + i%2, off: [3]int{0, 1, 2}}
		fs = append(fs, gemmClosure(r, tc, true))
	}
	return fs
}

// gemmClosure returns case tc on fixed random inputs through Gemm, or
// GemmBias with a random bias.
func gemmClosure(r *rand.Rand, tc gemmCase, bias bool) func() []float32 {
	g, la, lb, lc := tc.args()
	a, b, c := gemmToT[float32](gemmRand(r, la)), gemmToT[float32](gemmRand(r, lb)), gemmToT[float32](gemmRand(r, lc))
	var bs []float32
	if bias {
		bs = gemmToT[float32](gemmRand(r, tc.n))
	}
	return func() []float32 {
		out := append([]float32(nil), c...)
		GemmBias(g, a, b, bs, out)
		return out
	}
}

// halfClosure returns case tc on fixed random bfloat16 inputs through
// GemmHalf, or GemmHalfBF16 (C then out, widened back).
func halfClosure(r *rand.Rand, tc gemmCase, narrow bool) func() []float32 {
	g, ah, bh, c := bf16CaseInputs(r, tc)
	return func() []float32 {
		out := append([]float32(nil), c...)
		if !narrow {
			GemmHalf(g, ah, bh, true, true, out)
			return out
		}
		bits := make([]uint16, len(out))
		GemmHalfBF16(g, ah, bh, true, true, nil, out, bits)
		wide := make([]float32, len(bits))
		halfToF32(wide, bits, true)
		return append(out, wide...)
	}
}
