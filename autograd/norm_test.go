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

func TestGradLayerNorm(t *testing.T) {
	ln := func(affine, bias bool) func(*autograd.Scope, []*autograd.Tensor) *autograd.Tensor {
		return func(_ *autograd.Scope, in []*autograd.Tensor) *autograd.Tensor {
			var w, b *autograd.Tensor
			if affine {
				w = in[1]
			}
			if bias {
				b = in[len(in)-1]
			}
			return autograd.LayerNorm(in[0], w, b, 1e-5)
		}
	}
	runGradCases(t, []gradCase{
		{name: "affine", shapes: [][]int{{3, 5}, {5}, {5}}, f: ln(true, true)},
		{name: "plain", shapes: [][]int{{3, 5}}, f: ln(false, false)},
		{name: "weight_only", shapes: [][]int{{4, 3}, {3}}, f: ln(true, false)},
		{name: "bias_only", shapes: [][]int{{4, 3}, {3}}, f: ln(false, true)},
		{name: "rank3", shapes: [][]int{{2, 3, 4}, {4}, {4}}, f: ln(true, true)},
		{name: "vector", shapes: [][]int{{7}, {7}, {7}}, f: ln(true, true)},
		{name: "one_row", shapes: [][]int{{1, 6}, {6}, {6}}, f: ln(true, true)},
		{name: "one_column", shapes: [][]int{{4, 1}, {1}, {1}}, f: ln(true, true)},
		{name: "two_columns", shapes: [][]int{{3, 2}, {2}, {2}}, f: ln(true, true)},
		{name: "strided_input", shapes: [][]int{{5, 3}, {3}, {3}}, f: func(_ *autograd.Scope, in []*autograd.Tensor) *autograd.Tensor {
			// x.T() is (3, 5) strided; normalise a (5, 3) view of it
			// after a permutation back: strided x and strided dy.
			y := autograd.LayerNorm(in[0].T().T(), in[1], in[2], 1e-5)
			return y.T()
		}},
		{name: "strided_input2", shapes: [][]int{{3, 5}, {3}, {3}}, f: func(_ *autograd.Scope, in []*autograd.Tensor) *autograd.Tensor {
			return autograd.LayerNorm(in[0].T(), in[1], in[2], 1e-5)
		}},
	})
}

func TestGradBatchNorm(t *testing.T) {
	// bn runs BatchNorm2d with running statistics made in the step's scope
	// (their values matter in eval only).
	bn := func(training, affine bool) func(*autograd.Scope, []*autograd.Tensor) *autograd.Tensor {
		return func(s *autograd.Scope, in []*autograd.Tensor) *autograd.Tensor {
			x := in[0]
			c := x.Dim(1)
			rm, rv := make([]float64, c), make([]float64, c)
			for i := range c {
				rm[i], rv[i] = 0.3-0.2*float64(i), 0.5+0.4*float64(i)
			}
			runMean := s.FromFloat64s(x.Device(), []int{c}, rm)
			runVar := s.FromFloat64s(x.Device(), []int{c}, rv)
			var w, b *autograd.Tensor
			if affine {
				w, b = in[1], in[2]
			}
			return autograd.BatchNorm2d(x, w, b, runMean, runVar, training, 0.1, 1e-5)
		}
	}
	var cases []gradCase
	for _, training := range []bool{true, false} {
		p := "train_"
		if !training {
			p = "eval_"
		}
		cases = append(cases,
			gradCase{name: p + "nchw", shapes: [][]int{{2, 3, 2, 2}, {3}, {3}}, f: bn(training, true)},
			gradCase{name: p + "nchw_plain", shapes: [][]int{{2, 3, 2, 2}}, f: bn(training, false)},
			gradCase{name: p + "nc", shapes: [][]int{{5, 3}, {3}, {3}}, f: bn(training, true)},
			gradCase{name: p + "one_sample", shapes: [][]int{{1, 2, 3, 1}, {2}, {2}}, f: bn(training, true)},
			gradCase{name: p + "one_channel", shapes: [][]int{{3, 1, 1, 3}, {1}, {1}}, f: bn(training, true)},
			gradCase{name: p + "odd", shapes: [][]int{{3, 2, 1, 5}, {2}, {2}}, f: bn(training, true)},
		)
	}
	cases = append(cases, gradCase{name: "train_no_running_stats", shapes: [][]int{{4, 2, 3}, {2}, {2}},
		f: func(_ *autograd.Scope, in []*autograd.Tensor) *autograd.Tensor {
			return autograd.BatchNorm2d(in[0], in[1], in[2], nil, nil, true, 0.1, 1e-5)
		}})
	cases = append(cases, gradCase{name: "train_strided", shapes: [][]int{{2, 3, 4}, {2}, {2}},
		f: func(_ *autograd.Scope, in []*autograd.Tensor) *autograd.Tensor {
			// (2, 3, 4) permuted to (3, 2, 4): N 3, C 2, strided.
			return autograd.BatchNorm2d(in[0].Permute(1, 0, 2), in[1], in[2], nil, nil, true, 0.1, 1e-5)
		}})
	runGradCases(t, cases)
}

// TestBatchNormRunningStats runs two training steps and checks the running
// statistics against a float64 reference of PyTorch's update, then checks
// that eval uses them.
func TestBatchNormRunningStats(t *testing.T) {
	const n, c, h, w = 3, 2, 2, 3
	const mom, eps = 0.1, 1e-5
	rng := rand.New(rand.NewPCG(21, 22))
	for _, dt := range []dtype.DType{dtype.F64, dtype.F32} {
		dev := cpu.New(0, device.Options{})
		runMean := autograd.New(dev, dt, device.Parameter, c)
		runVar := autograd.Full(dev, dt, 1, c)
		wantM, wantV := []float64{0, 0}, []float64{1, 1}
		var last []float64
		for step := range 2 {
			xv := nslVals(rng, n*c*h*w, -1, 3)
			s := autograd.NewScope()
			x := s.FromFloat64s(dev, []int{n, c, h, w}, xv).Cast(dt)
			v0 := runMean.Block().Version()
			autograd.BatchNorm2d(x, nil, nil, runMean, runVar, true, mom, eps)
			if runMean.Block().Version() == v0 {
				t.Errorf("step %d: running mean's version not bumped", step)
			}
			s.Release()
			for ch := range c {
				var sum, ss float64
				for i := range n {
					for j := range h * w {
						sum += xv[(i*c+ch)*h*w+j]
					}
				}
				mu := sum / (n * h * w)
				for i := range n {
					for j := range h * w {
						d := xv[(i*c+ch)*h*w+j] - mu
						ss += d * d
					}
				}
				wantM[ch] = (1-mom)*wantM[ch] + mom*mu
				wantV[ch] = (1-mom)*wantV[ch] + mom*ss/(n*h*w-1)
			}
			last = xv
		}
		tol := 1e-15
		if dt == dtype.F32 {
			tol = 1e-6
		}
		if d := autogradtest.MaxDiff(runMean.Float64s(), wantM); d > tol {
			t.Errorf("%s running mean %v, want %v", dt, runMean.Float64s(), wantM)
		}
		if d := autogradtest.MaxDiff(runVar.Float64s(), wantV); d > tol {
			t.Errorf("%s running var %v, want %v", dt, runVar.Float64s(), wantV)
		}
		// Eval normalises with the running statistics and leaves them be.
		s := autograd.NewScope()
		x := s.FromFloat64s(dev, []int{n, c, h, w}, last).Cast(dt)
		y := autograd.BatchNorm2d(x, nil, nil, runMean, runVar, false, mom, eps).Float64s()
		for i, v := range last {
			ch := i / (h * w) % c
			want := (v - wantM[ch]) / math.Sqrt(wantV[ch]+eps)
			if math.Abs(y[i]-want) > 1e5*tol {
				t.Errorf("%s eval y[%d] = %v, want %v", dt, i, y[i], want)
				break
			}
		}
		s.Release()
		if d := autogradtest.MaxDiff(runMean.Float64s(), wantM); d > tol {
			t.Errorf("%s eval changed the running mean", dt)
		}
		runMean.Release()
		runVar.Release()
		if n := dev.LiveBlocks(); n != 0 {
			t.Errorf("%d blocks live: %v", n, dev.Live())
		}
	}
}

func TestNormDTypes(t *testing.T) {
	nslCompareDTypes(t, [][]int{{4, 6}, {6}, {6}}, []bool{true, true, true}, 24, 1e-5, func(_ *autograd.Scope, in []*autograd.Tensor) *autograd.Tensor {
		return autograd.LayerNorm(in[0], in[1], in[2], 1e-5)
	})
	for _, training := range []bool{true, false} {
		nslCompareDTypes(t, [][]int{{3, 2, 2, 2}, {2}, {2}}, []bool{true, true, true}, 24, 1e-5, func(s *autograd.Scope, in []*autograd.Tensor) *autograd.Tensor {
			rm := s.Full(in[0].Device(), in[0].DType(), 0.1, 2)
			rv := s.Full(in[0].Device(), in[0].DType(), 1.5, 2)
			return autograd.BatchNorm2d(in[0], in[1], in[2], rm, rv, training, 0.1, 1e-5)
		})
	}
}

func TestLayerNormMemory(t *testing.T) {
	build := func(dt dtype.DType, shape []int, affine bool) func(s *autograd.Scope, dev *device.Device) (func(), func() *autograd.Tensor) {
		return func(s *autograd.Scope, dev *device.Device) (func(), func() *autograd.Tensor) {
			c := shape[len(shape)-1]
			x := s.Full(dev, dt, 0.5, shape...)
			x.SetRequiresGrad(true)
			var w, b *autograd.Tensor
			if affine {
				w = autograd.Param(dev, dt, "w", c)
				b = autograd.Param(dev, dt, "b", c)
			}
			return func() {
					if affine {
						w.Release()
						b.Release()
					}
				}, func() *autograd.Tensor {
					return autograd.LayerNorm(x, w, b, 1e-5)
				}
		}
	}
	// (B, T, C) = (2, 3, 8): rows = 6; y plus mean and rstd, 2·rows·4 bytes.
	const rows, c = 6, 8
	t.Run("f32", func(t *testing.T) {
		nslMemCheck(t, rows*c*4+2*rows*4, 0, build(dtype.F32, []int{2, 3, c}, true))
	})
	t.Run("f32_no_affine", func(t *testing.T) {
		nslMemCheck(t, rows*c*4+2*rows*4, 0, build(dtype.F32, []int{2, 3, c}, false))
	})
	t.Run("bf16_stats_f32", func(t *testing.T) {
		nslMemCheck(t, rows*c*2+2*rows*4, 0, build(dtype.BF16, []int{2, 3, c}, true))
	})
	t.Run("f64_stats_f64", func(t *testing.T) {
		nslMemCheck(t, rows*c*8+2*rows*8, 0, build(dtype.F64, []int{2, 3, c}, true))
	})
}

func TestNormNoGradSavesNothing(t *testing.T) {
	dev := cpu.New(0, device.Options{})
	s := autograd.NewScope()
	defer s.Release()
	x := s.Full(dev, dtype.F32, 1, 4, 5)
	before := dev.Stats()
	y := autograd.LayerNorm(x, nil, nil, 1e-5)
	after := dev.Stats()
	a := func(st device.Stats) device.Counter { return st.ByTag[device.Activation] }
	w := func(st device.Stats) device.Counter { return st.ByTag[device.Workspace] }
	if d := a(after).Current - a(before).Current; d != y.Bytes() {
		t.Errorf("layer norm without grad kept %d activation bytes, want y = %d", d, y.Bytes())
	}
	if d := w(after).Peak - w(before).Current; d != 2*4*4 {
		t.Errorf("layer norm without grad borrowed %d workspace bytes, want the statistics 2·4·4", d)
	}
}

func TestBatchNormMemory(t *testing.T) {
	build := func(dt dtype.DType, training, relu bool) func(s *autograd.Scope, dev *device.Device) (func(), func() *autograd.Tensor) {
		return func(s *autograd.Scope, dev *device.Device) (func(), func() *autograd.Tensor) {
			x := s.Full(dev, dt, 0.5, 4, 3, 5, 2)
			x.SetRequiresGrad(true)
			w := autograd.Param(dev, dt, "w", 3)
			b := autograd.Param(dev, dt, "b", 3)
			rm := autograd.New(dev, dt, device.Parameter, 3)
			rv := autograd.New(dev, dt, device.Parameter, 3)
			return func() {
					for _, p := range []*autograd.Tensor{w, b, rm, rv} {
						p.Release()
					}
				}, func() *autograd.Tensor {
					if relu {
						return autograd.BatchNormReLU2d(x, w, b, rm, rv, training, 0.1, 1e-5)
					}
					return autograd.BatchNorm2d(x, w, b, rm, rv, training, 0.1, 1e-5)
				}
		}
	}
	// y plus mean and invstd, 2·C·4 bytes.
	const y, c = 4 * 3 * 5 * 2, 3
	t.Run("train_f32", func(t *testing.T) { nslMemCheck(t, y*4+2*c*4, 0, build(dtype.F32, true, false)) })
	// BatchNormReLU2d keeps the same and allocates no second activation
	// on the way (the BatchNorm's output before the ReLU).
	t.Run("train_relu_bf16", func(t *testing.T) { nslMemCheck(t, y*2+2*c*4, 0, build(dtype.BF16, true, true)) })
	t.Run("eval_relu_f32", func(t *testing.T) { nslMemCheck(t, y*4+2*c*4, 0, build(dtype.F32, false, true)) })
	t.Run("eval_f32", func(t *testing.T) { nslMemCheck(t, y*4+2*c*4, 0, build(dtype.F32, false, false)) })
	t.Run("train_f16", func(t *testing.T) { nslMemCheck(t, y*2+2*c*4, 0, build(dtype.F16, true, false)) })
	t.Run("train_f64", func(t *testing.T) { nslMemCheck(t, y*8+2*c*8, 0, build(dtype.F64, true, false)) })
}

func TestNormBadInput(t *testing.T) {
	dev := cpu.New(0, device.Options{})
	z := func(dt dtype.DType, shape ...int) *autograd.Tensor { return autograd.Zeros(dev, dt, shape...) }
	x := z(dtype.F32, 2, 3, 4)
	nslWantError(t, func() { autograd.LayerNorm(x, z(dtype.F32, 3), nil, 1e-5) }, "layer_norm", "[2 3 4]", "weight [3]", "want weight (4)")
	nslWantError(t, func() { autograd.LayerNorm(x, nil, z(dtype.F64, 4), 1e-5) }, "layer_norm", "bias [4] f64", "f32")
	nslWantError(t, func() { autograd.LayerNorm(z(dtype.F32, 2, 0), nil, nil, 1e-5) }, "layer_norm", "[2 0]", "empty")
	nslWantError(t, func() { autograd.LayerNorm(z(dtype.I64, 2, 3), nil, nil, 1e-5) }, "layer_norm", "[2 3] i64")
	nslWantError(t, func() { autograd.BatchNorm2d(z(dtype.F32, 4), nil, nil, nil, nil, true, 0.1, 1e-5) }, "batch_norm", "[4]", "(N, C, H, W)")
	nslWantError(t, func() { autograd.BatchNorm2d(x, z(dtype.F32, 4), nil, nil, nil, true, 0.1, 1e-5) }, "batch_norm", "[2 3 4]", "weight [4]", "want weight (3)")
	nslWantError(t, func() { autograd.BatchNorm2d(x, nil, nil, z(dtype.F32, 3), nil, false, 0.1, 1e-5) }, "batch_norm", "eval", "running var")
	nslWantError(t, func() { autograd.BatchNorm2d(z(dtype.F32, 1, 3), nil, nil, nil, nil, true, 0.1, 1e-5) }, "batch_norm", "[1 3]", "more than 1 value")
	nslWantError(t, func() { autograd.BatchNorm2d(x, nil, nil, z(dtype.F32, 3).SetRequiresGrad(true), nil, true, 0.1, 1e-5) }, "batch_norm", "require grad")
	nslWantError(t, func() { autograd.BatchNorm2d(x, nil, nil, nil, nil, true, 1.5, 1e-5) }, "batch_norm", "momentum 1.5")
}

// TestBatchNormReLU2d: in inference BatchNormReLU2d (one fused pass on the
// cpu) gives the bits of BatchNorm2d then ReLU, for F64, F32, BF16 and
// F16 activations; recording a graph, see TestBatchNormReLU2dRecorded and
// TestGradBatchNormReLU.
func TestBatchNormReLU2d(t *testing.T) {
	const n, c, h, w = 3, 4, 5, 7
	rng := rand.New(rand.NewPCG(31, 32))
	dev := cpu.New(0, device.Options{})
	for _, dt := range []dtype.DType{dtype.F64, dtype.F32, dtype.BF16, dtype.F16} {
		s := autograd.NewScope()
		x := s.FromFloat64s(dev, []int{n, c, h, w}, nslVals(rng, n*c*h*w, -2, 2)).Cast(dt)
		ch := func(lo, hi float64) *autograd.Tensor {
			return s.FromFloat64s(dev, []int{c}, nslVals(rng, c, lo, hi)).Cast(dt)
		}
		wt, b, rm, rv := ch(-1, 1), ch(-1, 1), ch(-0.5, 0.5), ch(0.5, 2)
		want := autograd.BatchNorm2d(x, wt, b, rm, rv, false, 0.1, 1e-5).ReLU().Float64s()
		got := autograd.BatchNormReLU2d(x, wt, b, rm, rv, false, 0.1, 1e-5).Float64s()
		for i := range want {
			if math.Float64bits(got[i]) != math.Float64bits(want[i]) {
				t.Errorf("%s: y[%d] = %v, want BatchNorm2d then ReLU's %v", dt, i, got[i], want[i])
				break
			}
		}
		s.Release()
	}
}

// TestBatchNormReLU2dRecorded: recording a graph, in training and in
// eval, F32 and BF16, BatchNormReLU2d's y and its gradients for x, w and
// b are the bits of BatchNorm2d then ReLU (the same kernels: the fused
// pass, then ReLU's gradient through y and BatchNorm2d's backward), and
// the running statistics move the same way.
func TestBatchNormReLU2dRecorded(t *testing.T) {
	const n, c, h, w = 4, 3, 5, 6
	dev := cpu.New(0, device.Options{})
	for _, dt := range []dtype.DType{dtype.F32, dtype.BF16} {
		for _, training := range []bool{true, false} {
			var outs [2][]([]float64)
			for k, fused := range []bool{false, true} {
				rng := rand.New(rand.NewPCG(41, 42)) // the same inputs for both
				s := autograd.NewScope()
				val := func(lo, hi float64, shape ...int) *autograd.Tensor {
					return s.FromFloat64s(dev, shape, nslVals(rng, numel(shape), lo, hi)).Cast(dt)
				}
				x, wt, b := val(-2, 2, n, c, h, w), val(-1, 1, c), val(-1, 1, c)
				rm, rv, g := val(-0.5, 0.5, c), val(0.5, 2, c), val(-1, 1, n, c, h, w)
				for _, p := range []*autograd.Tensor{x, wt, b} {
					p.SetRequiresGrad(true)
				}
				var y *autograd.Tensor
				if fused {
					y = autograd.BatchNormReLU2d(x, wt, b, rm, rv, training, 0.1, 1e-5)
				} else {
					y = autograd.BatchNorm2d(x, wt, b, rm, rv, training, 0.1, 1e-5).ReLU()
				}
				if err := y.BackwardWith(g); err != nil {
					t.Fatal(err)
				}
				outs[k] = [][]float64{y.Float64s(), x.Grad().Float64s(), wt.Grad().Float64s(), b.Grad().Float64s(), rm.Float64s(), rv.Float64s()}
				s.Release()
			}
			for i, name := range []string{"y", "dx", "dw", "db", "running mean", "running var"} {
				for e, v := range outs[1][i] {
					if math.Float64bits(v) != math.Float64bits(outs[0][i][e]) {
						t.Fatalf("%s training=%v: %s[%d] = %v, want BatchNorm2d then ReLU's %v", dt, training, name, e, v, outs[0][i][e])
					}
				}
			}
		}
	}
}

func numel(shape []int) int {
	m := 1
	for _, d := range shape {
		m *= d
	}
	return m
}

func TestGradBatchNormReLU(t *testing.T) {
	bnr := func(training bool) func(*autograd.Scope, []*autograd.Tensor) *autograd.Tensor {
		return func(s *autograd.Scope, in []*autograd.Tensor) *autograd.Tensor {
			c := in[0].Dim(1)
			rm := s.FromFloat64s(in[0].Device(), []int{c}, make([]float64, c))
			rv := s.FromFloat64s(in[0].Device(), []int{c}, nslVals(rand.New(rand.NewPCG(1, 2)), c, 0.5, 2))
			return autograd.BatchNormReLU2d(in[0], in[1], in[2], rm, rv, training, 0.1, 1e-5)
		}
	}
	runGradCases(t, []gradCase{
		{name: "train", shapes: [][]int{{2, 3, 2, 2}, {3}, {3}}, f: bnr(true)},
		{name: "eval", shapes: [][]int{{2, 3, 2, 2}, {3}, {3}}, f: bnr(false)},
	})
}

// TestBatchNormReLU2dUnrecordedPeak: in training without a graph (BN
// recalibration) BatchNormReLU2d is BatchNorm then ReLU, and holds no more
// than BatchNorm2d alone: x and y (the ReLU runs over y's storage), the
// statistics — not a third activation.
func TestBatchNormReLU2dUnrecordedPeak(t *testing.T) {
	const n, c, h, w = 2, 3, 4, 5
	dev := cpu.New(0, device.Options{})
	s := autograd.NewScope()
	defer s.Release()
	rng := rand.New(rand.NewPCG(7, 8))
	x := s.FromFloat64s(dev, []int{n, c, h, w}, nslVals(rng, n*c*h*w, -2, 2)).Cast(dtype.F32)
	ch := func(v float64) *autograd.Tensor {
		return s.FromFloat64s(dev, []int{c}, []float64{v, v, v}).Cast(dtype.F32)
	}
	wt, b, rm, rv := ch(1), ch(0), ch(0), ch(1)
	peak := func(relu bool) (p int64, y []float64) {
		dev.ResetPeak()
		base := dev.CurrentBytes()
		s.NoGrad(func() {
			f := autograd.BatchNorm2d
			if relu {
				f = autograd.BatchNormReLU2d
			}
			out := f(x, wt, b, rm, rv, true, 0.1, 1e-5)
			y = out.Float64s()
			out.Release()
		})
		return dev.PeakBytes() - base, y
	}
	plain, yb := peak(false)
	fused, yr := peak(true)
	if fused != plain {
		t.Errorf("training without a graph: BatchNormReLU2d peak %d B above the inputs, BatchNorm2d's %d B", fused, plain)
	}
	for i := range yb {
		if want := max(yb[i], 0); yr[i] != want {
			t.Fatalf("y[%d] = %v, want relu(%v)", i, yr[i], yb[i])
		}
	}
}
