package quant_test

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/headroom-ml/headroom/autograd"
	"github.com/headroom-ml/headroom/autograd/autogradtest"
	"github.com/headroom-ml/headroom/device"
	"github.com/headroom-ml/headroom/device/cpu"
	"github.com/headroom-ml/headroom/dtype"
	"github.com/headroom-ml/headroom/nn"
	"github.com/headroom-ml/headroom/optim"
	"github.com/headroom-ml/headroom/quant"
)

// awayFromEdges returns rows·cols values q·scale[r] + u·scale[r] with q an
// integer and |u| in [0.05, 0.4], so x/scale is never near a rounding edge
// (±0.5) nor the clipping edge (±127.5): most inside the range, some
// clipped (|q| ≥ 130).
func awayFromEdges(rng *rand.Rand, rows, cols int, scale []float32) []float64 {
	v := make([]float64, rows*cols)
	for i := range v {
		q := float64(rng.IntN(253) - 126)
		if rng.IntN(8) == 0 {
			q = math.Copysign(float64(130+rng.IntN(20)), q)
		}
		u := 0.05 + 0.35*rng.Float64()
		if rng.IntN(2) == 0 {
			u = -u
		}
		v[i] = (q + u) * float64(scale[(i/cols)%len(scale)])
	}
	return v
}

// TestFakeQuantizeStraightThrough checks FakeQuantize's gradient by
// central differences, per row (weights) and per tensor (activations), on
// inputs away from rounding and clipping edges:
//   - its forward is piecewise constant there: the differences of
//     FakeQuantize itself are 0;
//   - its gradient is the straight-through estimator, the derivative of
//     clamp(x, ±127.5·scale): autogradtest.Check on FakeQuantize(x) +
//     (clamp(x) − FakeQuantize(x)).Detach(), whose values are clamp's and
//     whose analytic gradient is FakeQuantize's, passes only if the two
//     derivatives agree (1 inside the range, 0 where clipped).
func TestFakeQuantizeStraightThrough(t *testing.T) {
	dev := cpu.New(0, device.Options{})
	rng := rand.New(rand.NewPCG(21, 1))
	for _, rows := range []int{3, 1} {
		const cols = 40
		scale := make([]float32, rows)
		for i := range scale {
			scale[i] = float32(0.01 + 0.05*rng.Float64())
		}
		xv := awayFromEdges(rng, rows, cols, scale)
		x := autograd.FromFloat64s(dev, []int{rows, cols}, xv).SetRequiresGrad(true)
		sc := autograd.FromFloat32s(dev, []int{rows}, scale)
		bound := make([]float64, rows)
		for i := range bound {
			bound[i] = 127.5 * float64(scale[i])
		}
		hi := autograd.FromFloat64s(dev, []int{rows, 1}, bound)

		// Piecewise constant: FakeQuantize(x ± 1e-6) = FakeQuantize(x).
		fq := func(v []float64) []float64 {
			s := autograd.NewScope()
			defer s.Release()
			var out []float64
			s.NoGrad(func() {
				out = quant.FakeQuantize(s.FromFloat64s(dev, []int{rows, cols}, v), s.Use(sc), rows).Float64s()
			})
			return out
		}
		base := fq(xv)
		for _, d := range []float64{1e-6, -1e-6} {
			moved := make([]float64, len(xv))
			for i := range xv {
				moved[i] = xv[i] + d
			}
			for i, v := range fq(moved) {
				if v != base[i] {
					t.Fatalf("rows %d: FakeQuantize(%g%+g) = %g, FakeQuantize(%g) = %g: not constant away from edges", rows, xv[i], d, v, xv[i], base[i])
				}
			}
		}
		inside := 0
		for i, v := range xv {
			if math.Abs(v) < bound[i/cols] {
				inside++
				if e := math.Abs(base[i] - v); e > float64(scale[i/cols])/2*(1+1e-6) {
					t.Fatalf("rows %d: FakeQuantize(%g) = %g: more than half a step (%g) away", rows, v, base[i], scale[i/cols])
				}
			}
		}
		ok := autogradtest.Check(t, autogradtest.Options{Seed: 4}, func(s *autograd.Scope, in []*autograd.Tensor) *autograd.Tensor {
			x := in[0]
			q := quant.FakeQuantize(x, s.Use(sc), rows)
			h := s.Use(hi)
			c := x.Minimum(h).Maximum(h.Neg())
			return q.Add(c.Sub(q).Detach())
		}, x)
		if ok {
			t.Logf("rows %d: straight-through gradient matches clamp's derivative (%d of %d values inside the range)", rows, inside, len(xv))
		}
		release(nil, x, sc, hi)
	}
}

// TestQATConv2dGradients checks the gradients of a QAT convolution with
// its batch-norm folded (F64) by central differences: with respect to the
// convolution's weight and the batch-norm's weight and bias against the
// same layer with the weight not rounded (the straight-through surrogate,
// folded by the test itself), and with respect to the input, with a frozen
// static scale, against clamp(x) in place of the fake-quantized input.
func TestQATConv2dGradients(t *testing.T) {
	dev := cpu.New(0, device.Options{})
	b := nn.NewBuilder(dev, dtype.F64, 5)
	rng := rand.New(rand.NewPCG(22, 1))
	conv := nn.NewConv2d(b, "conv", 2, 3, [2]int{3, 3}, autograd.ConvOptions{Padding: [2]int{1, 1}}, false)
	bn := nn.NewBatchNorm2d(b, "bn", 3, nn.BatchNormOptions{})
	bn.Weight.SetFloat64s([]float64{0.8, -1.3, 1.1})
	bn.Bias.SetFloat64s([]float64{0.1, 0.2, -0.3})
	bn.RunningMean.SetFloat64s([]float64{0.05, -0.1, 0.2})
	bn.RunningVar.SetFloat64s([]float64{0.5, 1.2, 0.9})
	xshape := []int{2, 2, 5, 4}
	const sx = 0.02
	xv := awayFromEdges(rng, 1, 80, []float32{sx})

	// Calibrate a static layer on x, then freeze it (eval: no observing).
	layer, err := quant.PrepareConv2d(conv, bn, false, quant.Config{Activations: quant.Static}, true)
	if err != nil {
		t.Fatal(err)
	}
	// The observed scale is max|x|/127; rescale x so that scale is sx and
	// the edges stay where awayFromEdges put them relative to sx... instead
	// feed one calibration batch whose range gives exactly sx.
	calib := make([]float64, 80)
	calib[0] = 127 * sx
	s := autograd.NewScope()
	s.NoGrad(func() { layer.Forward(s.FromFloat64s(dev, xshape, calib)).Release() })
	s.Release()
	layer.Train(false)

	fold := func(s *autograd.Scope) (w, bias *autograd.Tensor) {
		inv := make([]float64, 3)
		for k, v := range bn.RunningVar.Float64s() {
			inv[k] = 1 / math.Sqrt(v+bn.Eps)
		}
		g := s.Use(bn.Weight).Mul(s.FromFloat64s(dev, []int{3}, inv))
		w = s.Use(conv.Weight).Mul(g.Reshape(3, 1, 1, 1))
		bias = s.Use(bn.Bias).Sub(s.Use(bn.RunningMean).Mul(g))
		return w, bias
	}
	// Weights and batch-norm parameters: the surrogate convolves the same
	// fake-quantized input with the unrounded folded weight.
	xs := autograd.FromFloat64s(dev, xshape, xv)
	autogradtest.Check(t, autogradtest.Options{Seed: 6}, func(s *autograd.Scope, in []*autograd.Tensor) *autograd.Tensor {
		x := s.Use(xs)
		y := layer.Forward(x)
		w, bias := fold(s)
		xq := quant.FakeQuantize(x, s.FromFloat32s(dev, []int{1}, []float32{sx}), 1)
		sur := autograd.Conv2d(xq, w, bias, conv.Opt)
		return y.Add(sur.Sub(y).Detach())
	}, conv.Weight, bn.Weight, bn.Bias)

	// Input: the surrogate convolves clamp(x) with the fake-quantized
	// folded weight, computed without a graph.
	x := autograd.FromFloat64s(dev, xshape, xv).SetRequiresGrad(true)
	autogradtest.Check(t, autogradtest.Options{Seed: 7}, func(s *autograd.Scope, in []*autograd.Tensor) *autograd.Tensor {
		y := layer.Forward(in[0])
		var wq, bias *autograd.Tensor
		s.NoGrad(func() {
			var w *autograd.Tensor
			w, bias = fold(s)
			wq = quant.FakeQuantize(w, quant.Scales(w, 3), 3)
		})
		lim := s.Full(dev, dtype.F64, 127.5*sx)
		c := in[0].Minimum(lim).Maximum(lim.Neg())
		sur := autograd.Conv2d(c, wq, bias, conv.Opt)
		return y.Add(sur.Sub(y).Detach())
	}, x)
	release(nil, xs, x)
	nn.Release(conv)
	nn.Release(bn)
}

// TestQATFineTunes fine-tunes a small ResNet with QAT on a task the float
// model has not learned (the sign of the image's mean) and checks that the
// loss falls, that gradients reached the float parameters (batch-norm
// included), and that the converted int8 model computes what the QAT
// model computes.
func TestQATFineTunes(t *testing.T) {
	dev := cpu.New(0, device.Options{})
	r, err := nn.NewResNet(nn.NewBuilder(dev, dtype.F32, 3), "resnet", nn.ResNetConfig{Blocks: []int{1, 1}, Widths: []int{4, 8}, Stem: "small", InChannels: 1, Classes: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer nn.Release(r)
	q, err := quant.PrepareQATResNet(r, quant.Config{Activations: quant.Static})
	if err != nil {
		t.Fatal(err)
	}
	opt, err := optim.NewAdam(q.Params(), optim.AdamConfig{LR: 0.01})
	if err != nil {
		t.Fatal(err)
	}
	defer opt.Release()
	rng := rand.New(rand.NewPCG(8, 8))
	const n = 32
	batch := func() ([]float32, []int64) {
		x := make([]float32, n*64)
		y := make([]int64, n)
		for i := range n {
			sign := float32(1)
			if rng.IntN(2) == 0 {
				sign, y[i] = -1, 1
			}
			for j := range 64 {
				x[i*64+j] = sign*0.5 + float32(rng.NormFloat64())
			}
		}
		return x, y
	}
	gamma := r.BN1.Weight.Float32s()
	var first, last float64
	for step := range 40 {
		xv, yv := batch()
		s := autograd.NewScope()
		loss := autograd.CrossEntropy(q.Forward(s.FromFloat32s(dev, []int{n, 1, 8, 8}, xv)), s.FromInt64s(dev, []int{n}, yv), autograd.CEOptions{})
		if err := loss.Backward(); err != nil {
			t.Fatal(err)
		}
		v := loss.Item()
		s.Release()
		if err := opt.Step(); err != nil {
			t.Fatal(err)
		}
		opt.ZeroGrad()
		if step < 5 {
			first += v / 5
		}
		if step >= 35 {
			last += v / 5
		}
	}
	t.Logf("QAT fine-tuning: loss %.3f over the first 5 steps, %.3f over the last 5", first, last)
	if !(last < 0.6*first) {
		t.Errorf("QAT did not learn: loss %.3f → %.3f", first, last)
	}
	if g := r.BN1.Weight.Float32s(); g[0] == gamma[0] {
		t.Errorf("bn1's weight did not change (%g): no gradient through the folding", g[0])
	}
	q.Train(false)
	xv, _ := batch()
	fq := forward(dev, q, []int{n, 1, 8, 8}, xv)
	c, err := q.Convert()
	if err != nil {
		t.Fatal(err)
	}
	defer nn.Release(c)
	if e := relErr(forward(dev, c, []int{n, 1, 8, 8}, xv), fq); e > 1e-5 {
		t.Errorf("converted model differs from the QAT model by %g", e)
	}
}
