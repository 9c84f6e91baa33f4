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
