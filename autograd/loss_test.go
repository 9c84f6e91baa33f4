package autograd_test

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/headroom-ml/headroom/autograd"
	"github.com/headroom-ml/headroom/autograd/autogradtest"
	"github.com/headroom-ml/headroom/device"
	"github.com/headroom-ml/headroom/device/cpu"
	"github.com/headroom-ml/headroom/dtype"
)

// nslTargets returns n class indices in [0, v), every third one replaced
// by ignore when ign.
func nslTargets(seed uint64, n, v int, ign bool, ignore int64) []int64 {
	rng := rand.New(rand.NewPCG(seed, 5))
	t := make([]int64, n)
	for i := range t {
		t[i] = int64(rng.IntN(v))
		if ign && i%3 == 1 {
			t[i] = ignore
		}
	}
	return t
}

func TestGradCrossEntropy(t *testing.T) {
	ce := func(tgt []int64, i32 bool, o autograd.CEOptions) func(*autograd.Scope, []*autograd.Tensor) *autograd.Tensor {
		return func(s *autograd.Scope, in []*autograd.Tensor) *autograd.Tensor {
			tt := s.FromInt64s(in[0].Device(), []int{len(tgt)}, tgt)
			if i32 {
				tt = tt.Cast(dtype.I32)
			}
			return autograd.CrossEntropy(in[0], tt, o)
		}
	}
	var cases []gradCase
	for _, red := range []string{"", "sum", "none"} {
		for _, ign := range []bool{false, true} {
			for _, eps := range []float64{0, 0.2} {
				name := red
				if name == "" {
					name = "mean"
				}
				if ign {
					name += "_ignore"
				}
				if eps != 0 {
					name += "_smooth"
				}
				o := autograd.CEOptions{Reduction: red, Ignore: ign, IgnoreIndex: -100, LabelSmoothing: eps}
				cases = append(cases, gradCase{name: name, shapes: [][]int{{5, 4}}, f: ce(nslTargets(1, 5, 4, ign, -100), false, o)})
			}
		}
	}
	cases = append(cases,
		gradCase{name: "one_row", shapes: [][]int{{1, 3}}, f: ce([]int64{2}, false, autograd.CEOptions{})},
		gradCase{name: "one_class", shapes: [][]int{{3, 1}}, f: ce([]int64{0, 0, 0}, false, autograd.CEOptions{LabelSmoothing: 0.1})},
		gradCase{name: "i32_targets", shapes: [][]int{{4, 5}}, f: ce([]int64{4, 0, 2, 2}, true, autograd.CEOptions{Reduction: "sum"})},
		gradCase{name: "ignore_a_class", shapes: [][]int{{4, 3}}, f: ce([]int64{1, 0, 2, 1}, false, autograd.CEOptions{Ignore: true, IgnoreIndex: 1, LabelSmoothing: 0.3})},
		gradCase{name: "all_ignored_sum", shapes: [][]int{{2, 3}}, f: ce([]int64{-1, -1}, false, autograd.CEOptions{Reduction: "sum", Ignore: true, IgnoreIndex: -1})},
		gradCase{name: "strided_logits", shapes: [][]int{{4, 3}}, f: func(s *autograd.Scope, in []*autograd.Tensor) *autograd.Tensor {
			return ce([]int64{0, 3, 1}, false, autograd.CEOptions{LabelSmoothing: 0.1})(s, []*autograd.Tensor{in[0].T()})
		}},
		gradCase{name: "log_softmax_then_ce", shapes: [][]int{{3, 4}}, f: func(s *autograd.Scope, in []*autograd.Tensor) *autograd.Tensor {
			// CE is invariant to a per-row shift, so CE(LogSoftmax(x)) = CE(x);
			// the gradient flows through both ops.
			return ce([]int64{1, 3, 0}, false, autograd.CEOptions{})(s, []*autograd.Tensor{autograd.LogSoftmax(in[0], 1)})
		}},
	)
	runGradCases(t, cases)
}

// nslCERef computes cross entropy in float64 straight from the formula:
// p = softmax(z), l_i = (1-ε)·(-log p_t) + ε·(1/V)·Σ_c -log p_c.
func nslCERef(z []float64, tgt []int64, n, v int, o autograd.CEOptions) []float64 {
	var rows []float64
	var sum float64
	count := 0
	for i := range n {
		if o.Ignore && tgt[i] == int64(o.IgnoreIndex) {
			rows = append(rows, 0)
			continue
		}
		var s float64
		for c := range v {
			s += math.Exp(z[i*v+c])
		}
		var smooth float64
		for c := range v {
			smooth -= math.Log(math.Exp(z[i*v+c]) / s)
		}
		l := (1-o.LabelSmoothing)*-math.Log(math.Exp(z[i*v+int(tgt[i])])/s) + o.LabelSmoothing*smooth/float64(v)
		rows = append(rows, l)
		sum += l
		count++
	}
	switch o.Reduction {
	case "none":
		return rows
	case "sum":
		return []float64{sum}
	}
	return []float64{sum / float64(count)}
}

func TestCrossEntropyReference(t *testing.T) {
	const n, v = 7, 5
	rng := rand.New(rand.NewPCG(31, 32))
	dev := cpu.New(0, device.Options{})
	for _, red := range []string{"", "sum", "none"} {
		for _, ign := range []bool{false, true} {
			for _, eps := range []float64{0, 0.15} {
				o := autograd.CEOptions{Reduction: red, Ignore: ign, IgnoreIndex: 3, LabelSmoothing: eps}
				z := nslVals(rng, n*v, -3, 3)
				tgt := nslTargets(7, n, v, ign, 3)
				want := nslCERef(z, tgt, n, v, o)
				for _, dt := range []dtype.DType{dtype.F64, dtype.F32} {
					s := autograd.NewScope()
					x := s.FromFloat64s(dev, []int{n, v}, z).Cast(dt)
					got := autograd.CrossEntropy(x, s.FromInt64s(dev, []int{n}, tgt), o).Float64s()
					s.Release()
					tol := 1e-14
					if dt == dtype.F32 {
						tol = 1e-6
					}
					if d := autogradtest.MaxDiff(got, want); !(d <= tol*(1+autogradtest.MaxAbs(want))) {
						t.Errorf("%s %+v: loss %v, want %v", dt, o, got, want)
					}
				}
			}
		}
	}
	if n := dev.LiveBlocks(); n != 0 {
		t.Errorf("%d blocks live: %v", n, dev.Live())
	}
}

func TestCrossEntropyDTypes(t *testing.T) {
	tgt := []int64{3, 0, 5, 1}
	for _, o := range []autograd.CEOptions{{}, {Reduction: "none", LabelSmoothing: 0.1}, {Ignore: true, IgnoreIndex: 0}} {
		outLen := 1
		if o.Reduction == "none" {
			outLen = 4
		}
		nslCompareDTypes(t, [][]int{{4, 6}}, []bool{true}, outLen, 1e-5, func(s *autograd.Scope, in []*autograd.Tensor) *autograd.Tensor {
			return autograd.CrossEntropy(in[0], s.FromInt64s(in[0].Device(), []int{4}, tgt), o)
		})
	}
}

func TestCrossEntropyMemory(t *testing.T) {
	const n, v = 6, 11
	build := func(dt dtype.DType, o autograd.CEOptions) func(s *autograd.Scope, dev *device.Device) (func(), func() *autograd.Tensor) {
		return func(s *autograd.Scope, dev *device.Device) (func(), func() *autograd.Tensor) {
			x := s.Full(dev, dt, 0.25, n, v)
			x.SetRequiresGrad(true)
			tgt := s.FromInt64s(dev, []int{n}, nslTargets(3, n, v, o.Ignore, -100))
			return func() {}, func() *autograd.Tensor { return autograd.CrossEntropy(x, tgt, o) }
		}
	}
	// lse (N·4) plus the output; mean and sum borrow the per-row losses.
	t.Run("mean_f32", func(t *testing.T) { nslMemCheck(t, n*4+4, n*4, build(dtype.F32, autograd.CEOptions{})) })
	t.Run("sum_ignore_smooth_f32", func(t *testing.T) {
		nslMemCheck(t, n*4+4, n*4, build(dtype.F32, autograd.CEOptions{Reduction: "sum", Ignore: true, IgnoreIndex: -100, LabelSmoothing: 0.1}))
	})
	t.Run("none_f32", func(t *testing.T) {
		nslMemCheck(t, n*4+n*4, 0, build(dtype.F32, autograd.CEOptions{Reduction: "none"}))
	})
	// bf16 logits: an f32 loss, f32 per-row losses.
	t.Run("mean_bf16", func(t *testing.T) { nslMemCheck(t, n*4+4, n*4, build(dtype.BF16, autograd.CEOptions{})) })
	t.Run("mean_f64", func(t *testing.T) { nslMemCheck(t, n*8+8, n*8, build(dtype.F64, autograd.CEOptions{})) })
}

func TestMSELoss(t *testing.T) {
	runGradCases(t, []gradCase{
		{name: "mse", shapes: [][]int{{3, 4}, {3, 4}}, f: func(_ *autograd.Scope, in []*autograd.Tensor) *autograd.Tensor { return autograd.MSELoss(in[0], in[1]) }},
		{name: "mse_scalar", shapes: [][]int{{1}, {1}}, f: func(_ *autograd.Scope, in []*autograd.Tensor) *autograd.Tensor { return autograd.MSELoss(in[0], in[1]) }},
	})
	dev := cpu.New(0, device.Options{})
	s := autograd.NewScope()
	x := s.FromFloat64s(dev, []int{2, 2}, []float64{1, 2, 3, 4})
	y := s.FromFloat64s(dev, []int{2, 2}, []float64{1, 0, 4, 6})
	if got := autograd.MSELoss(x, y).Item(); got != (0+4+1+4)/4.0 {
		t.Errorf("MSELoss = %v, want 2.25", got)
	}
	s.Release()
	// Saves x - y: x's bytes, besides the scalar output; (x - y)² is a
	// transient activation.
	nslMemCheckPeak(t, 3*5*4+4, 0, 3*5*4, func(s *autograd.Scope, dev *device.Device) (func(), func() *autograd.Tensor) {
		x := s.Full(dev, dtype.F32, 1, 3, 5)
		x.SetRequiresGrad(true)
		y := s.Full(dev, dtype.F32, 2, 3, 5)
		return func() {}, func() *autograd.Tensor { return autograd.MSELoss(x, y) }
	})
}

func TestCrossEntropyBadInput(t *testing.T) {
	dev := cpu.New(0, device.Options{})
	s := autograd.NewScope()
	defer s.Release()
	x := s.Zeros(dev, dtype.F32, 3, 4)
	tg := s.FromInt64s(dev, []int{3}, []int64{0, 1, 2})
	nslWantError(t, func() { autograd.CrossEntropy(s.Zeros(dev, dtype.F32, 3, 4, 2), tg, autograd.CEOptions{}) }, "cross_entropy", "[3 4 2]", "(N, V)")
	nslWantError(t, func() { autograd.CrossEntropy(x, s.FromInt64s(dev, []int{2}, []int64{0, 1}), autograd.CEOptions{}) }, "cross_entropy", "[3 4]", "target [2]", "want target (3)")
	nslWantError(t, func() { autograd.CrossEntropy(x, s.Zeros(dev, dtype.F32, 3), autograd.CEOptions{}) }, "cross_entropy", "f32", "i64 or i32")
	nslWantError(t, func() { autograd.CrossEntropy(x, tg, autograd.CEOptions{Reduction: "avg"}) }, "cross_entropy", `"avg"`)
	nslWantError(t, func() { autograd.CrossEntropy(x, tg, autograd.CEOptions{LabelSmoothing: 1.5}) }, "cross_entropy", "label smoothing 1.5")
	nslWantError(t, func() { autograd.CrossEntropy(x, s.FromInt64s(dev, []int{3}, []int64{0, 4, 1}), autograd.CEOptions{}) }, "cross_entropy", "target 4 of row 1", "[0, 4)")
	nslWantError(t, func() {
		autograd.CrossEntropy(x, s.FromInt64s(dev, []int{3}, []int64{0, -100, 1}), autograd.CEOptions{})
	}, "cross_entropy", "target -100 of row 1")
	nslWantError(t, func() { autograd.MSELoss(x, s.Zeros(dev, dtype.F32, 4, 3)) }, "mse_loss", "[3 4]", "[4 3]")
}
