package nn_test

import (
	"math"
	"testing"

	"github.com/headroom-ml/headroom/device"
	"github.com/headroom-ml/headroom/device/cpu"
	"github.com/headroom-ml/headroom/dtype"
	"github.com/headroom-ml/headroom/nn"
)

// TestInitRangeAlone checks that any element range of a record, produced
// alone, equals the same range of the whole, bit for bit — odd and even
// starts and ends, so pairs are split.
func TestInitRangeAlone(t *testing.T) {
	const n = 1001
	for _, in := range []nn.Init{
		{Kind: nn.InitUniform, A: -0.3, B: 0.7, Seed: 9, Stream: 4},
		{Kind: nn.InitNormal, A: 1, B: 0.02, Seed: 1 << 40, Stream: 1<<33 + 1},
		{Kind: nn.InitFill, A: 1},
	} {
		whole := make([]float64, n)
		in.Values(whole, 0)
		for _, r := range [][2]int{{0, 1}, {1, 2}, {3, 10}, {500, 501}, {7, 1001}, {0, 1001}, {998, 1001}} {
			part := make([]float64, r[1]-r[0])
			in.Values(part, r[0])
			for i, v := range part {
				if math.Float64bits(v) != math.Float64bits(whole[r[0]+i]) {
					t.Fatalf("kind %d range [%d,%d): element %d is %v alone, %v in the whole", in.Kind, r[0], r[1], r[0]+i, v, whole[r[0]+i])
				}
			}
		}
	}
}

// TestInitStatistics checks the draws of 1e5 elements: mean and variance
// within 5 standard errors of the distribution's, and two streams of one
// seed (and one stream of two seeds) uncorrelated within 5/√n.
func TestInitStatistics(t *testing.T) {
	const n = 100000
	draw := func(in nn.Init) []float64 {
		v := make([]float64, n)
		in.Values(v, 0)
		return v
	}
	lo, hi := -2.0, 3.0
	w := hi - lo
	u := draw(nn.Init{Kind: nn.InitUniform, A: lo, B: hi, Seed: 3})
	// U[lo,hi): σ² = w²/12, fourth central moment w⁴/80.
	checkMoments(t, "uniform", u, (lo+hi)/2, w*w/12, math.Pow(w, 4)/80)
	for _, x := range u {
		if x < lo || x >= hi {
			t.Fatalf("uniform draw %v outside [%g, %g)", x, lo, hi)
		}
	}
	g := draw(nn.Init{Kind: nn.InitNormal, A: 0.5, B: 2, Seed: 3})
	// N(μ, σ²): fourth central moment 3σ⁴.
	checkMoments(t, "normal", g, 0.5, 4, 3*16)
	for _, pair := range [][2]nn.Init{
		{{Kind: nn.InitNormal, A: 0, B: 1, Seed: 3}, {Kind: nn.InitNormal, A: 0, B: 1, Seed: 3, Stream: 1}},
		{{Kind: nn.InitNormal, A: 0, B: 1, Seed: 3}, {Kind: nn.InitNormal, A: 0, B: 1, Seed: 4}},
	} {
		a, b := draw(pair[0]), draw(pair[1])
		var c float64
		for i := range a {
			c += a[i] * b[i]
		}
		if c /= n; math.Abs(c) > 5/math.Sqrt(n) {
			t.Errorf("%+v and %+v: correlation %.5f, want |ρ| ≤ %.5f", pair[0], pair[1], c, 5/math.Sqrt(n))
		}
	}
	// Neighbours within a stream (the two halves of a Box–Muller pair).
	var c float64
	for i := 0; i+1 < n; i += 2 {
		c += (g[i] - 0.5) * (g[i+1] - 0.5) / 4
	}
	if c /= n / 2; math.Abs(c) > 5/math.Sqrt(n/2) {
		t.Errorf("normal pairs: correlation %.5f", c)
	}
}

// checkMoments compares the sample mean and variance of v with the
// distribution's mean, variance and fourth central moment m4 (standard
// errors √(σ²/n) and √((m4−σ⁴)/n)).
func checkMoments(t *testing.T, what string, v []float64, mean, variance, m4 float64) {
	t.Helper()
	n := float64(len(v))
	var s, ss float64
	for _, x := range v {
		s += x
	}
	m := s / n
	for _, x := range v {
		ss += (x - m) * (x - m)
	}
	vr := ss / (n - 1)
	if se := math.Sqrt(variance / n); math.Abs(m-mean) > 5*se {
		t.Errorf("%s: mean %.5f, want %g ± %.5f", what, m, mean, 5*se)
	}
	if se := math.Sqrt((m4 - variance*variance) / n); math.Abs(vr-variance) > 5*se {
		t.Errorf("%s: variance %.5f, want %g ± %.5f", what, vr, variance, 5*se)
	}
}

// TestBuilderStreams checks that building a model twice with one seed gives
// identical parameters, that the records reproduce them, and that a
// deferred build holds no parameter memory and materialises, on use, the
// values of the eager build.
func TestBuilderStreams(t *testing.T) {
	cfg := nn.GPTConfig{Vocab: 50, Context: 8, Layers: 2, Heads: 2, Width: 8, Bias: true}
	dev := cpu.New(0, device.Options{})
	defer dev.Close()
	build := func(b *nn.Builder) *nn.GPT {
		g, err := nn.NewGPT(b, "gpt", cfg, nil)
		if err != nil {
			t.Fatal(err)
		}
		return g
	}
	b1 := nn.NewBuilder(dev, dtype.F32, 7)
	g1, g2 := build(b1), build(nn.NewBuilder(dev, dtype.F32, 7))
	defer nn.Release(g1)
	defer nn.Release(g2)
	v1, v2 := values(g1), values(g2)
	for i, p := range g1.Params() {
		if !equalF(v1[i], v2[i]) {
			t.Errorf("same seed: %s differs", p.Name)
		}
		in, ok := b1.Init(p.T)
		if !ok {
			t.Fatalf("%s has no record", p.Name)
		}
		want := make([]float64, p.T.Len())
		in.Values(want, 0)
		for j := range want {
			want[j] = float64(float32(want[j]))
		}
		if !equalF(v1[i], want) {
			t.Errorf("%s differs from its record's values", p.Name)
		}
	}
	before := dev.Stats().Requested.Current
	g3 := build(nn.NewDeferredBuilder(dev, dtype.F32, 7))
	defer nn.Release(g3)
	if got := dev.Stats().Requested.Current - before; got != 0 {
		t.Errorf("deferred build holds %d bytes, want 0", got)
	}
	v3 := values(g3) // reading materialises every parameter
	for i, p := range g1.Params() {
		if !equalF(v1[i], v3[i]) {
			t.Errorf("deferred build: %s differs from the eager build", p.Name)
		}
	}
	if got, want := dev.Stats().Requested.Current-before, nn.ParamBytes(g3); got != want {
		t.Errorf("materialised deferred build holds %d bytes, want %d", got, want)
	}
}
