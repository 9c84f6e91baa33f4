package nn_test

import (
	"math/rand/v2"
	"testing"

	"github.com/headroom-ml/headroom/autograd"
	"github.com/headroom-ml/headroom/autograd/autogradtest"
	"github.com/headroom-ml/headroom/device"
	"github.com/headroom-ml/headroom/device/cpu"
	"github.com/headroom-ml/headroom/dtype"
	"github.com/headroom-ml/headroom/nn"
)

// f64 returns a cpu device and an F64 builder seeded with seed, for
// gradient checks.
func f64(seed uint64) (*device.Device, *nn.Builder) {
	dev := cpu.New(0, device.Options{})
	return dev, nn.NewBuilder(dev, dtype.F64, seed)
}

// randInput returns an F64 leaf requiring grad with values in [-1, 1).
func randInput(dev *device.Device, seed uint64, shape ...int) *autograd.Tensor {
	return autogradtest.Rand(dev, rand.New(rand.NewPCG(seed, 7)), -1, 1, shape...)
}

// gradcheck compares, by central differences, the gradients of f with
// respect to x (when not nil) and to every trainable parameter of m — the
// very tensors the layer computes with, which Check perturbs in place.
func gradcheck(t *testing.T, m nn.Module, x *autograd.Tensor, f func(s *autograd.Scope, x *autograd.Tensor) *autograd.Tensor) {
	t.Helper()
	var in []*autograd.Tensor
	if x != nil {
		in = append(in, x)
	}
	ps := nn.Trainable(m)
	for _, p := range ps {
		in = append(in, p.T)
	}
	ok := autogradtest.Check(t, autogradtest.Options{Seed: 3}, func(s *autograd.Scope, in []*autograd.Tensor) *autograd.Tensor {
		if x == nil {
			return f(s, nil)
		}
		return f(s, in[0])
	}, in...)
	n := 0
	for _, t := range in {
		n += t.Len()
	}
	if ok {
		t.Logf("gradcheck passed over %d elements (%d parameter tensors)", n, len(ps))
	}
}

// fill sets every float parameter of m to seeded values in [lo, hi), so
// checks do not start from special values (weight 1, bias 0).
func fill(m nn.Module, seed uint64, lo, hi float64) {
	rng := rand.New(rand.NewPCG(seed, 5))
	for _, p := range m.Params() {
		v := make([]float64, p.T.Len())
		for i := range v {
			v[i] = lo + (hi-lo)*rng.Float64()
		}
		p.T.SetFloat64s(v)
	}
}

// values returns every parameter's values, in order.
func values(m nn.Module) [][]float64 {
	var out [][]float64
	for _, p := range m.Params() {
		out = append(out, p.T.Float64s())
	}
	return out
}

// layerOf adapts a Layer to gradcheck's f.
func layerOf(l nn.Layer) func(s *autograd.Scope, x *autograd.Tensor) *autograd.Tensor {
	return func(_ *autograd.Scope, x *autograd.Tensor) *autograd.Tensor { return l.Forward(x) }
}
