package prune_test

import (
	"math"
	"math/rand/v2"
	"slices"
	"strings"

	"github.com/headroom-ml/headroom/autograd"
	"github.com/headroom-ml/headroom/device"
	"github.com/headroom-ml/headroom/dtype"
	"github.com/headroom-ml/headroom/nn"
)

// randomize sets every parameter and buffer of m to seeded values in
// [-1, 1) — running variances in [0.5, 1.5) — so that checks do not start
// from special values (batch-norm weight 1, bias 0, statistics 0 and 1).
func randomize(m nn.Module, seed uint64) {
	rng := rand.New(rand.NewPCG(seed, 11))
	for _, p := range m.Params() {
		v := make([]float64, p.T.Len())
		lo, hi := -1.0, 1.0
		if strings.HasSuffix(p.Name, "running_var") {
			lo, hi = 0.5, 1.5
		}
		for i := range v {
			v[i] = lo + (hi-lo)*rng.Float64()
		}
		p.T.SetFloat64s(v)
	}
}

// zeroRows sets to zero the slices rows of t's first dimension (dim 0) or
// its second (dim 1).
func zeroRows(t *autograd.Tensor, dim int, rows []int) {
	if t == nil {
		return
	}
	v := t.Float64s()
	shape := t.Shape()
	outer := 1
	for _, d := range shape[:dim] {
		outer *= d
	}
	n := shape[dim]
	inner := len(v) / (outer * n)
	for o := range outer {
		for _, r := range rows {
			for i := range inner {
				v[(o*n+r)*inner+i] = 0
			}
		}
	}
	t.SetFloat64s(v)
}

// pick returns k distinct indices below n, ascending, drawn with rng.
func pick(rng *rand.Rand, n, k int) []int {
	out := rng.Perm(n)[:k]
	slices.Sort(out)
	return out
}

// complement returns the indices below n not in drop, ascending.
func complement(n int, drop []int) []int {
	var out []int
	for i := range n {
		if !slices.Contains(drop, i) {
			out = append(out, i)
		}
	}
	return out
}

// forward runs m on x (a host copy of shape) in eval mode without a graph
// and returns the output's values.
func forward(dev *device.Device, m nn.Layer, dt dtype.DType, shape []int, x []float64) []float64 {
	m.Train(false)
	defer m.Train(true)
	s := autograd.NewScope()
	defer s.Release()
	var out []float64
	s.NoGrad(func() {
		in := s.FromFloat64s(dev, shape, x)
		if dt != dtype.F64 {
			in = in.Cast(dt)
		}
		out = m.Forward(in).Float64s()
	})
	return out
}

// randSlice returns n seeded values in [-1, 1).
func randSlice(seed uint64, n int) []float64 {
	rng := rand.New(rand.NewPCG(seed, 3))
	v := make([]float64, n)
	for i := range v {
		v[i] = 2*rng.Float64() - 1
	}
	return v
}

// maxRelDiff returns max |a−b| relative to the output's scale, max |b|
// (at least 1).
func maxRelDiff(a, b []float64) float64 {
	d, scale := 0.0, 1.0
	for i := range a {
		d = max(d, math.Abs(a[i]-b[i]))
		scale = max(scale, math.Abs(b[i]))
	}
	return d / scale
}

// paramTensors returns m's parameter tensors by name.
func paramTensors(m nn.Module) map[string]*autograd.Tensor {
	out := map[string]*autograd.Tensor{}
	for _, p := range m.Params() {
		out[p.Name] = p.T
	}
	return out
}

// values returns every parameter's values, in order.
func values(m nn.Module) [][]float64 {
	var out [][]float64
	for _, p := range m.Params() {
		out = append(out, p.T.Float64s())
	}
	return out
}

// paramBytes returns the bytes the device's parameter tag holds.
func paramBytes(dev *device.Device) int64 { return dev.Stats().Tag(device.Parameter).Current }

// trainStep runs forward and backward of a cross-entropy loss on a seeded
// batch of four 28×28 images for r (1 input channel), leaving the
// gradients in r's parameters (added to those already there). It returns
// the loss.
func trainStep(dev *device.Device, r *nn.ResNet, seed uint64) (float64, error) {
	const n = 4
	x := randSlice(seed, n*28*28)
	y := make([]int64, n)
	for i := range y {
		y[i] = int64(i*3) % int64(r.Config.Classes)
	}
	s := autograd.NewScope()
	defer s.Release()
	var l *autograd.Tensor
	err := autograd.Try(func() {
		in := s.FromFloat64s(dev, []int{n, 1, 28, 28}, x)
		if dt := r.FC.Weight.DType(); dt != dtype.F64 {
			in = in.Cast(dt)
		}
		l = autograd.CrossEntropy(r.Forward(in), s.FromInt64s(dev, []int{n}, y), autograd.CEOptions{})
	})
	if err != nil {
		return 0, err
	}
	loss := l.Item()
	return loss, l.Backward()
}
