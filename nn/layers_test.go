package nn_test

import (
	"math"
	"testing"

	"github.com/headroom-ml/headroom/autograd"
	"github.com/headroom-ml/headroom/nn"
)

func TestConv2dGrad(t *testing.T) {
	for _, tc := range []struct {
		name         string
		in, out      int
		kernel       [2]int
		opt          autograd.ConvOptions
		bias         bool
		n, h, w      int
		wantH, wantW int
	}{
		{"3x3 pad 1 bias", 2, 3, [2]int{3, 3}, autograd.ConvOptions{Padding: [2]int{1, 1}}, true, 2, 4, 5, 4, 5},
		{"stride 2 dilation 2 groups 2", 4, 2, [2]int{2, 3}, autograd.ConvOptions{Stride: [2]int{2, 1}, Dilation: [2]int{1, 2}, Groups: 2}, false, 1, 5, 7, 2, 3},
		{"1x1", 3, 2, [2]int{1, 1}, autograd.ConvOptions{}, true, 2, 3, 3, 3, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dev, b := f64(1)
			c := nn.NewConv2d(b, "conv", tc.in, tc.out, tc.kernel, tc.opt, tc.bias)
			defer nn.Release(c)
			x := randInput(dev, 2, tc.n, tc.in, tc.h, tc.w)
			defer x.Release()
			s := autograd.NewScope()
			y := c.Forward(s.Use(x))
			if got, want := y.Shape(), []int{tc.n, tc.out, tc.wantH, tc.wantW}; !equal(got, want) {
				t.Errorf("Conv2d output shape %v, want %v", got, want)
			}
			s.Release()
			gradcheck(t, c, x, layerOf(c))
		})
	}
}

// TestConv2dInit checks PyTorch's default: U(±1/√fanIn), fanIn = in/groups·kh·kw.
func TestConv2dInit(t *testing.T) {
	_, b := f64(4)
	c := nn.NewConv2d(b, "c", 8, 16, [2]int{3, 5}, autograd.ConvOptions{Groups: 2}, true)
	defer nn.Release(c)
	bound := 1 / math.Sqrt(4*3*5)
	for _, p := range c.Params() {
		v := p.T.Float64s()
		lo, hi := minMax(v)
		// The 480 weights spread over the interval; the 16 biases only stay in it.
		if lo < -bound || hi > bound || (p.T == c.Weight && (hi < 0.95*bound || lo > -0.95*bound)) {
			t.Errorf("%s: values in [%.4f, %.4f], want spread over [-%.4f, %.4f]", p.Name, lo, hi, bound, bound)
		}
	}
	if got := c.Weight.Shape(); !equal(got, []int{16, 4, 3, 5}) {
		t.Errorf("weight shape %v, want [16 4 3 5]", got)
	}
}

func TestBatchNorm2dGrad(t *testing.T) {
	for _, train := range []bool{true, false} {
		dev, b := f64(1)
		n := nn.NewBatchNorm2d(b, "bn", 3, nn.BatchNormOptions{})
		fill(n, 9, 0.5, 1.5) // weight, bias and running stats away from 1, 0
		n.Train(train)
		x := randInput(dev, 2, 2, 3, 3, 2)
		gradcheck(t, n, x, layerOf(n))
		x.Release()
		nn.Release(n)
	}
}

// TestBatchNorm2dModes checks the closed forms: training normalises with
// the batch's statistics and moves the running ones by momentum 0.1 with
// the unbiased variance; eval uses the running ones and changes nothing.
func TestBatchNorm2dModes(t *testing.T) {
	dev, b := f64(1)
	n := nn.NewBatchNorm2d(b, "bn", 2, nn.BatchNormOptions{})
	defer nn.Release(n)
	if n.Momentum != 0.1 || n.Eps != 1e-5 {
		t.Errorf("defaults: momentum %g eps %g, want 0.1 and 1e-5", n.Momentum, n.Eps)
	}
	if w, rv := n.Weight.Float64s(), n.RunningVar.Float64s(); w[0] != 1 || rv[1] != 1 {
		t.Errorf("initial weight %v running var %v, want ones", w, rv)
	}
	// x (2, 2, 1, 2): channel 0 holds 1, 2, 3, 4; channel 1 holds 0, 0, 0, 8.
	xs := []float64{1, 2, 0, 0, 3, 4, 0, 8}
	s := autograd.NewScope()
	defer s.Release()
	x := s.FromFloat64s(dev, []int{2, 2, 1, 2}, xs)
	y := n.Forward(x).Float64s()
	mean, v := 2.5, 1.25 // channel 0; biased variance
	if got, want := y[0], (1-mean)/math.Sqrt(v+1e-5); math.Abs(got-want) > 1e-12 {
		t.Errorf("train y[0] = %v, want %v", got, want)
	}
	rm, rv := n.RunningMean.Float64s(), n.RunningVar.Float64s()
	if math.Abs(rm[0]-0.25) > 1e-12 || math.Abs(rv[0]-(0.9+0.1*v*4/3)) > 1e-12 || math.Abs(rm[1]-0.2) > 1e-12 {
		t.Errorf("running mean %v var %v after one step, want [0.25 0.2] and var[0] %v", rm, rv, 0.9+0.1*v*4/3)
	}
	n.Train(false)
	y = n.Forward(x).Float64s()
	if got, want := y[7], (8-rm[1])/math.Sqrt(rv[1]+1e-5); math.Abs(got-want) > 1e-12 {
		t.Errorf("eval y[7] = %v, want %v (running statistics)", got, want)
	}
	if rm2 := n.RunningMean.Float64s(); rm2[0] != rm[0] || rm2[1] != rm[1] {
		t.Errorf("eval changed the running mean: %v → %v", rm, rm2)
	}
	ps := n.Params()
	if len(ps) != 4 || ps[0].Buffer || ps[1].Buffer || !ps[2].Buffer || !ps[3].Buffer || ps[2].Name != "bn.running_mean" {
		t.Errorf("params %v: want weight, bias, then running_mean and running_var as buffers", names(ps))
	}
}

func TestLayerNormGrad(t *testing.T) {
	for _, noBias := range []bool{false, true} {
		dev, b := f64(1)
		l := nn.NewLayerNorm(b, "ln", 5, nn.LayerNormOptions{NoBias: noBias})
		fill(l, 3, -1, 1)
		x := randInput(dev, 2, 2, 3, 5)
		gradcheck(t, l, x, layerOf(l))
		if got := len(l.Params()); got != 2-btoi(noBias) {
			t.Errorf("NoBias %v: %d params", noBias, got)
		}
		x.Release()
		nn.Release(l)
	}
}

func TestEmbeddingGrad(t *testing.T) {
	dev, b := f64(1)
	e := nn.NewEmbedding(b, "wte", 6, 3, 0)
	defer nn.Release(e)
	idx := []int64{0, 5, 2, 2, 5, 5} // repeats accumulate
	gradcheck(t, e, nil, func(s *autograd.Scope, _ *autograd.Tensor) *autograd.Tensor {
		return e.Forward(s.FromInt64s(dev, []int{2, 3}, idx))
	})
	s := autograd.NewScope()
	defer s.Release()
	y := e.Forward(s.FromInt64s(dev, []int{2, 3}, idx))
	if got := y.Shape(); !equal(got, []int{2, 3, 3}) {
		t.Errorf("output shape %v, want [2 3 3]", got)
	}
	if got, want := y.Float64s()[3:6], e.Weight.Float64s()[15:18]; !equalF(got, want) {
		t.Errorf("row for index 5 = %v, want %v", got, want)
	}
}

// TestEmbeddingInit checks N(0, std²): std 0 means 1, PyTorch's default.
func TestEmbeddingInit(t *testing.T) {
	_, b := f64(2)
	for _, std := range []float64{0, 0.02} {
		e := nn.NewEmbedding(b, "e", 100, 50, std)
		want := std
		if std == 0 {
			want = 1
		}
		mean, sd := meanStd(e.Weight.Float64s())
		if math.Abs(mean) > 0.05*want || math.Abs(sd-want) > 0.05*want {
			t.Errorf("std %g: sample mean %.4f std %.4f, want 0 and %g", std, mean, sd, want)
		}
		nn.Release(e)
	}
}

func TestDropoutGrad(t *testing.T) {
	dev, b := f64(1)
	gen := autograd.NewGenerator(42)
	start := gen.State()
	d := nn.NewDropout(b, "drop", 0.4, gen)
	x := randInput(dev, 2, 3, 7)
	defer x.Release()
	// A fresh generator state for every evaluation: the same mask each time.
	gradcheck(t, d, x, func(_ *autograd.Scope, x *autograd.Tensor) *autograd.Tensor {
		gen.SetState(start)
		return d.Forward(x)
	})
	s := autograd.NewScope()
	defer s.Release()
	gen.SetState(start)
	y, xv := d.Forward(s.Use(x)).Float64s(), x.Float64s()
	zeros := 0
	for i := range y {
		switch {
		case y[i] == 0:
			zeros++
		case math.Abs(y[i]-xv[i]/0.6) > 1e-12:
			t.Errorf("kept element %d = %v, want x/(1-p) = %v", i, y[i], xv[i]/0.6)
		}
	}
	if zeros == 0 || zeros == len(y) {
		t.Errorf("%d of %d elements dropped at p = 0.4", zeros, len(y))
	}
	d.Train(false)
	if y := d.Forward(s.Use(x)).Float64s(); !equalF(y, xv) {
		t.Errorf("eval dropout changed its input: %v → %v", xv, y)
	}
}

func TestConstructorErrors(t *testing.T) {
	_, b := f64(1)
	for name, f := range map[string]func(){
		"conv groups":    func() { nn.NewConv2d(b, "c", 3, 4, [2]int{3, 3}, autograd.ConvOptions{Groups: 2}, false) },
		"bn channels":    func() { nn.NewBatchNorm2d(b, "bn", 0, nn.BatchNormOptions{}) },
		"dropout p":      func() { nn.NewDropout(b, "d", 1, autograd.NewGenerator(1)) },
		"dropout gen":    func() { nn.NewDropout(b, "d", 0.1, nil) },
		"attn heads":     func() { nn.NewCausalSelfAttention(b, "a", 10, 3, 0, nil, true) },
		"embedding size": func() { nn.NewEmbedding(b, "e", 0, 3, 0) },
	} {
		err := autograd.Try(f)
		if err == nil {
			t.Errorf("%s: no error", name)
			continue
		}
		t.Logf("%s: %v", name, err)
	}
	if got := b.Dev.CurrentBytes(); got != 0 {
		t.Errorf("failed constructors left %d bytes allocated", got)
	}
}

func equal(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func equalF(a, b []float64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func minMax(v []float64) (lo, hi float64) {
	lo, hi = math.Inf(1), math.Inf(-1)
	for _, x := range v {
		lo, hi = math.Min(lo, x), math.Max(hi, x)
	}
	return lo, hi
}

func meanStd(v []float64) (mean, std float64) {
	for _, x := range v {
		mean += x
	}
	mean /= float64(len(v))
	for _, x := range v {
		std += (x - mean) * (x - mean)
	}
	return mean, math.Sqrt(std / float64(len(v)))
}

func names(ps []nn.Param) []string {
	var out []string
	for _, p := range ps {
		out = append(out, p.Name)
	}
	return out
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}
