package kernels

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/headroom-ml/headroom/dtype"
)

// bnHalfCase is one batch-norm problem: bfloat16 x and dy, their exact
// float32 widenings, and float32 per-channel operands.
type bnHalfCase struct {
	n, c, hw        int
	x, dy           []uint16
	x32, dy32, w, b []float32
	runMean, runVar []float32
}

func newBNHalfCase(r *rand.Rand, n, c, hw int) *bnHalfCase {
	k := &bnHalfCase{n: n, c: c, hw: hw}
	m := n * c * hw
	k.x, k.dy = make([]uint16, m), make([]uint16, m)
	for i := range m {
		k.x[i] = dtype.BF16FromF32(float32(r.NormFloat64()*3 + 0.5))
		k.dy[i] = dtype.BF16FromF32(float32(r.NormFloat64()))
	}
	k.x32, k.dy32 = widen16(k.x), widen16(k.dy)
	for range c {
		k.w = append(k.w, float32(r.NormFloat64()))
		k.b = append(k.b, float32(r.NormFloat64()))
		k.runMean = append(k.runMean, float32(r.NormFloat64()))
		k.runVar = append(k.runVar, float32(1+r.Float64()))
	}
	return k
}

func widen16(s []uint16) []float32 {
	out := make([]float32, len(s))
	for i, v := range s {
		out[i] = dtype.BF16ToF32(v)
	}
	return out
}

func narrow16(s []float32) []uint16 {
	out := make([]uint16, len(s))
	for i, v := range s {
		out[i] = dtype.BF16FromF32(v)
	}
	return out
}

// TestBatchNormBF16MatchesF32: BatchNormBF16 (with and without the fused
// ReLU) and BatchNormGradBF16 equal the float32 kernels on the widened
// operands, outputs rounded to bfloat16, bit for bit, and so do the
// statistics; the fused ReLU equals BatchNorm then ReLU. Runs of 1 to 69
// values take the assembly body and the Go tails.
func TestBatchNormBF16MatchesF32(t *testing.T) {
	saved := normParallelMin
	normParallelMin = 1 << 10 // split across the workers too
	defer func() { normParallelMin = saved }()
	r := rand.New(rand.NewPCG(8, 9))
	forEachPath(t, func(t *testing.T) {
		for _, hw := range []int{1, 3, 8, 16, 17, 64, 69} {
			k := newBNHalfCase(r, 5, 7, hw)
			for _, training := range []bool{true, false} {
				k.check(t, training)
			}
		}
	})
}

func (k *bnHalfCase) check(t *testing.T, training bool) {
	t.Helper()
	m, c := len(k.x), k.c
	stats := func() (rm, rv, mean, is []float32) {
		return slices.Clone(k.runMean), slices.Clone(k.runVar), make([]float32, c), make([]float32, c)
	}
	y32 := make([]float32, m)
	rm32, rv32, mean32, is32 := stats()
	BatchNorm(y32, k.x32, k.w, k.b, rm32, rv32, mean32, is32, k.n, c, k.hw, training, 0.1, 1e-5)
	relu32 := make([]float32, m)
	reluGo(relu32, widen16(narrow16(y32)))
	for _, relu := range []bool{false, true} {
		y := make([]uint16, m)
		rm, rv, mean, is := stats()
		BatchNormBF16(y, k.x, k.w, k.b, rm, rv, mean, is, k.n, c, k.hw, training, relu, 0.1, 1e-5)
		want := narrow16(y32)
		if relu {
			want = narrow16(relu32)
		}
		if i := firstDiff16(y, want); i >= 0 {
			t.Errorf("hw %d training %v relu %v: y[%d] = %#04x, want %#04x", k.hw, training, relu, i, y[i], want[i])
		}
		for _, s := range [][2][]float32{{rm, rm32}, {rv, rv32}, {mean, mean32}, {is, is32}} {
			if !slices.Equal(s[0], s[1]) {
				t.Errorf("hw %d training %v: statistics %v, want %v", k.hw, training, s[0], s[1])
			}
		}
	}
	dx32, dw32, db32 := make([]float32, m), make([]float32, c), make([]float32, c)
	BatchNormGrad(dx32, dw32, db32, k.dy32, k.x32, k.w, mean32, is32, k.n, c, k.hw, training)
	dx, dw, db := make([]uint16, m), make([]float32, c), make([]float32, c)
	BatchNormGradBF16(dx, k.dy, k.x, dw, db, k.w, mean32, is32, k.n, c, k.hw, training)
	if i := firstDiff16(dx, narrow16(dx32)); i >= 0 {
		t.Errorf("hw %d training %v: dx[%d] = %#04x, want %#04x", k.hw, training, i, dx[i], narrow16(dx32)[i])
	}
	if !slices.Equal(dw, dw32) || !slices.Equal(db, db32) {
		t.Errorf("hw %d training %v: dw %v db %v, want %v %v", k.hw, training, dw, db, dw32, db32)
	}
}

// TestBatchNormReluMatchesUnfused: the float32 and float64 BatchNormRelu
// equal BatchNorm followed by ReLU bit for bit.
func TestBatchNormReluMatchesUnfused(t *testing.T) {
	r := rand.New(rand.NewPCG(10, 11))
	k := newBNHalfCase(r, 3, 4, 37)
	k.x32[5] = float32(math.NaN())
	for _, training := range []bool{true, false} {
		m := len(k.x32)
		want, got := make([]float32, m), make([]float32, m)
		s := func() ([]float32, []float32, []float32, []float32) {
			return slices.Clone(k.runMean), slices.Clone(k.runVar), make([]float32, k.c), make([]float32, k.c)
		}
		a, b, c, d := s()
		BatchNorm(want, k.x32, k.w, k.b, a, b, c, d, k.n, k.c, k.hw, training, 0.1, 1e-5)
		reluGo(want, want)
		a, b, c, d = s()
		BatchNormRelu(got, k.x32, k.w, k.b, a, b, c, d, k.n, k.c, k.hw, training, 0.1, 1e-5)
		for i := range want {
			if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
				t.Fatalf("training %v: y[%d] = %v, want %v", training, i, got[i], want[i])
			}
		}
	}
}

// bnLoopOutputs runs the bfloat16 batch-norm loops over x and dy (one run
// each) and returns their outputs: the affine map with and without ReLU,
// the gradient map, and the bits of the sums (16 lanes of sum and sqDev,
// 8 of dotDev's two).
func bnLoopOutputs(x, dy []uint16) (y, yr, dx []uint16, sums []uint64) {
	n := len(x)
	y, yr, dx = make([]uint16, n), make([]uint16, n), make([]uint16, n)
	affineBF16(y, x, 1.7, -0.3, false)
	affineBF16(yr, x, -0.9, 0.25, true)
	bnGradRunBF16(dx, dy, x, 0.4, 1.3, -0.7, 0.05)
	var s, q [16]float64
	var a, ax [8]float64
	sumLanesBF16(&s, x)
	sqDevBF16(&q, x, 0.4)
	dotDevBF16(&a, &ax, dy, x, 0.4)
	for _, v := range append(append(append(s[:], q[:]...), a[:]...), ax[:]...) {
		sums = append(sums, math.Float64bits(v))
	}
	return y, yr, dx, sums
}

// TestBatchNormBF16LoopsAllPatterns: the AVX-512 and AVX2 loops of the
// bfloat16 batch norm equal the Go loops (their twin) bit for bit, over
// every bfloat16 pattern as x (NaNs, infinities, subnormals, outputs
// that round to and past the largest finite value) with a shifted copy
// as dy, in runs whose lengths take each path's body and tails; the sums
// see only finite values, so that they stay comparable. A NaN output
// only has to be a NaN: which operand's payload survives when both dy and
// x are NaNs depends on the order the Go compiler gives the operands.
func TestBatchNormBF16LoopsAllPatterns(t *testing.T) {
	r := rand.New(rand.NewPCG(12, 13))
	all := halfPatternsAll(r, 13)
	var finite []uint16
	for _, v := range all {
		if v&0x7f80 != 0x7f80 && v&0x7fff < 0x5000 { // finite, below 2^33: squares stay finite
			finite = append(finite, v)
		}
	}
	type result struct {
		y, yr, dx []uint16
		sums      []uint64
	}
	runs := func() []result {
		var out []result
		for _, src := range [][]uint16{all, finite} {
			for _, n := range []int{len(src), 37, 24, 16, 9} {
				x := src[len(src)-n:]
				dy := append(slices.Clone(x[n/3:]), x[:n/3]...)
				var res result
				res.y, res.yr, res.dx, res.sums = bnLoopOutputs(x, dy)
				out = append(out, res)
			}
		}
		return out
	}
	saved := CPU
	defer func() { CPU = saved }()
	CPU = Features{}
	want := runs()
	for _, f := range []Features{saved, {AVX2FMA: saved.AVX2FMA}} {
		CPU = f
		if !f.AVX2FMA {
			continue
		}
		for i, got := range runs() {
			for _, o := range [][2][]uint16{{got.y, want[i].y}, {got.yr, want[i].yr}, {got.dx, want[i].dx}} {
				if j := firstDiffBF16(o[0], o[1]); j >= 0 {
					t.Errorf("%s run %d: output[%d] = %#04x, want %#04x", f.Path(), i, j, o[0][j], o[1][j])
				}
			}
			if i >= 5 && !slices.Equal(got.sums, want[i].sums) { // the finite runs
				t.Errorf("%s run %d: sums %x, want %x", f.Path(), i, got.sums, want[i].sums)
			}
		}
	}
}

// firstDiffBF16 is firstDiff16 with every bfloat16 NaN equal to every
// other.
func firstDiffBF16(a, b []uint16) int {
	nan := func(v uint16) bool { return v&0x7fff > 0x7f80 }
	for i := range a {
		if a[i] != b[i] && !(nan(a[i]) && nan(b[i])) {
			return i
		}
	}
	return -1
}
