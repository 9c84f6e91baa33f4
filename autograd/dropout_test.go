package autograd_test

import (
	"encoding/json"
	"math"
	"testing"

	"github.com/headroom-ml/headroom/autograd"
	"github.com/headroom-ml/headroom/device"
	"github.com/headroom-ml/headroom/device/cpu"
	"github.com/headroom-ml/headroom/dtype"
)

func TestGradDropout(t *testing.T) {
	// Each evaluation gets a fresh generator with the same seed, so every
	// finite difference sees the mask the analytic gradient used.
	drop := func(p float64, training bool) func(*autograd.Scope, []*autograd.Tensor) *autograd.Tensor {
		return func(_ *autograd.Scope, in []*autograd.Tensor) *autograd.Tensor {
			return autograd.Dropout(in[0], p, autograd.NewGenerator(7), training)
		}
	}
	runGradCases(t, []gradCase{
		{name: "p0.4", shapes: [][]int{{4, 5}}, f: drop(0.4, true)},
		{name: "odd_size1", shapes: [][]int{{3, 1, 7}}, f: drop(0.5, true)},
		{name: "p0.9", shapes: [][]int{{9}}, f: drop(0.9, true)},
		{name: "transposed", shapes: [][]int{{3, 5}}, f: func(_ *autograd.Scope, in []*autograd.Tensor) *autograd.Tensor {
			return autograd.Dropout(in[0].T(), 0.3, autograd.NewGenerator(3), true)
		}},
		{name: "eval_identity", shapes: [][]int{{2, 3}}, f: drop(0.5, false)},
		{name: "p0_identity", shapes: [][]int{{2, 3}}, f: drop(0, true)},
	})
}

// dropMask runs dropout on n ones with gen and returns the output.
func dropMask(dev *device.Device, n int, p float64, gen *autograd.Generator) []float32 {
	s := autograd.NewScope()
	defer s.Release()
	x := s.Full(dev, dtype.F32, 1, n)
	return autograd.Dropout(x, p, gen, true).Float32s()
}

func TestDropoutStatistics(t *testing.T) {
	dev := cpu.New(0, device.Options{})
	const n, p = 100000, 0.3
	gen := autograd.NewGenerator(1234)
	st := gen.State()
	a := dropMask(dev, n, p, gen)
	kept := 0
	for i, v := range a {
		switch {
		case v == 0:
		case math.Abs(float64(v)-1/(1-p)) < 1e-6:
			kept++
		default:
			t.Fatalf("element %d = %g, want 0 or %g", i, v, 1/(1-p))
		}
	}
	mean, sd := n*(1-p), math.Sqrt(n*p*(1-p))
	if math.Abs(float64(kept)-mean) > 4*sd {
		t.Errorf("kept %d of %d with p=%g, want %.0f ± %.0f (4σ)", kept, n, p, mean, 4*sd)
	}
	if got := gen.State(); got.Offset != n || got.Seed != 1234 {
		t.Errorf("state after drawing %d = %+v, want offset %d", n, got, n)
	}

	// The same state gives the same mask: what checkpoint recomputation relies on.
	gen.SetState(st)
	if b := dropMask(dev, n, p, gen); !equal32(a, b) {
		t.Error("restoring the generator's state gave a different mask")
	}
	// The next draw and another seed give different masks.
	c := dropMask(dev, n, p, gen)
	d := dropMask(dev, n, p, autograd.NewGenerator(1235))
	for name, m := range map[string][]float32{"the next draw": c, "another seed": d} {
		same := 0
		for i := range a {
			if (a[i] == 0) == (m[i] == 0) {
				same++
			}
		}
		// independent masks agree on p²+(1-p)² = 58% of the elements
		if frac := float64(same) / n; frac > 0.6 {
			t.Errorf("%s agrees with the first mask on %.1f%% of elements", name, 100*frac)
		}
	}
}

func TestGeneratorState(t *testing.T) {
	gen := autograd.NewGenerator(9)
	dev := cpu.New(0, device.Options{})
	dropMask(dev, 10, 0.5, gen)
	// 10 elements reserve 12 positions: every draw starts a Philox block.
	if got := gen.State(); got != (autograd.GeneratorState{Seed: 9, Offset: 12}) {
		t.Errorf("state = %+v, want {Seed:9 Offset:12}", got)
	}
	if gen.Seed() != 9 {
		t.Errorf("Seed() = %d", gen.Seed())
	}
	b, err := json.Marshal(gen.State())
	if err != nil || string(b) != `{"seed":9,"offset":12}` {
		t.Errorf("json = %s, %v", b, err)
	}
	var st autograd.GeneratorState
	if err := json.Unmarshal([]byte(`{"seed":18446744073709551615,"offset":4}`), &st); err != nil || st.Seed != math.MaxUint64 || st.Offset != 4 {
		t.Errorf("unmarshal = %+v, %v", st, err)
	}
	// Eval mode draws nothing.
	s := autograd.NewScope()
	autograd.Dropout(s.Zeros(dev, dtype.F32, 5), 0.5, gen, false)
	s.Release()
	if gen.State().Offset != 12 {
		t.Errorf("eval-mode dropout advanced the generator to %d", gen.State().Offset)
	}
}

// TestDropoutDTypes checks that one seed gives one mask in every dtype.
func TestDropoutDTypes(t *testing.T) {
	dev := cpu.New(0, device.Options{})
	s := autograd.NewScope()
	defer s.Release()
	vals := make([]float64, 37)
	for i := range vals {
		vals[i] = float64(i%5) - 1.5
	}
	x64 := s.FromFloat64s(dev, []int{37}, vals)
	want := autograd.Dropout(x64, 0.25, autograd.NewGenerator(5), true).Float64s()
	for _, dt := range []dtype.DType{dtype.F32, dtype.F16, dtype.BF16} {
		x := x64.Cast(dt)
		x.SetRequiresGrad(true)
		y := autograd.Dropout(x, 0.25, autograd.NewGenerator(5), true)
		got := y.Float64s()
		for i := range want {
			if math.Abs(got[i]-want[i]) > 1e-2*math.Abs(want[i]) {
				t.Fatalf("%s element %d = %g, F64 gives %g", dt, i, got[i], want[i])
			}
		}
		if err := y.Sum(false).Backward(); err != nil {
			t.Fatal(err)
		}
		// the gradient of Σ y is the mask scaled: y = x·grad
		g := x.Grad().Float64s()
		for i := range g {
			if math.Abs(vals[i]*g[i]-want[i]) > 1e-2*math.Abs(want[i]) {
				t.Fatalf("%s: x·grad at %d = %g, want %g", dt, i, vals[i]*g[i], want[i])
			}
		}
		x.ZeroGrad()
	}
}

func TestDropoutMemory(t *testing.T) {
	run := func(dev *device.Device) {
		// (8, 25) F32: the output, 800 bytes, is the only allocation and
		// nothing is saved: 0 bytes held by the graph.
		iaMemory(t, dev, "dropout", []int{8, 25}, 800, 0, func(s *autograd.Scope, x *autograd.Tensor) (*autograd.Tensor, []*autograd.Tensor) {
			return autograd.Dropout(x, 0.5, autograd.NewGenerator(1), true), nil
		})
		// eval mode: a view, no allocation
		iaMemory(t, dev, "dropout_eval", []int{8, 25}, 0, 0, func(s *autograd.Scope, x *autograd.Tensor) (*autograd.Tensor, []*autograd.Tensor) {
			return autograd.Dropout(x, 0.5, nil, false), nil
		})
	}
	iaStatsEqual(t, "dropout", run)
}

func TestDropoutBadInput(t *testing.T) {
	dev := cpu.New(0, device.Options{})
	s := autograd.NewScope()
	defer s.Release()
	x := s.Zeros(dev, dtype.F32, 2, 3)
	gen := autograd.NewGenerator(0)
	iaWantError(t, "p=1", func() { autograd.Dropout(x, 1, gen, true) }, "dropout", "probability 1", "[2 3]", "0 ≤ p < 1")
	iaWantError(t, "p<0", func() { autograd.Dropout(x, -0.1, gen, false) }, "dropout", "probability -0.1")
	iaWantError(t, "NaN", func() { autograd.Dropout(x, math.NaN(), gen, true) }, "dropout", "NaN")
	iaWantError(t, "nil generator", func() { autograd.Dropout(x, 0.5, nil, true) }, "dropout", "nil generator", "[2 3]")
	iaWantError(t, "integer", func() { autograd.Dropout(s.Zeros(dev, dtype.I64, 2), 0.5, gen, true) }, "dropout", "i64")
}
