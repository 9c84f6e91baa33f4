package lora_test

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/headroom-ml/headroom/autograd"
	"github.com/headroom-ml/headroom/device"
	"github.com/headroom-ml/headroom/dtype"
	"github.com/headroom-ml/headroom/lora"
	"github.com/headroom-ml/headroom/nn"
)

// tiny is the GPT of the tests: 2 blocks of width 8, an untied head.
var tiny = nn.GPTConfig{Vocab: 16, Context: 8, Layers: 2, Heads: 2, Width: 8, Bias: true}

// newGPT builds tiny in dt on dev with seed.
func newGPT(t *testing.T, dev *device.Device, dt dtype.DType, seed uint64) *nn.GPT {
	t.Helper()
	g, err := nn.NewGPT(nn.NewBuilder(dev, dt, seed), "gpt", tiny, nil)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// apply applies cfg to g, failing the test on an error.
func apply(t *testing.T, g *nn.GPT, cfg lora.Config) *lora.GPT {
	t.Helper()
	m, err := lora.Apply(g, cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// batch is a fixed batch of token indices and targets.
func batch(seed uint64) (x, y []int64) {
	rng := rand.New(rand.NewPCG(seed, 2))
	x, y = make([]int64, 2*tiny.Context), make([]int64, 2*tiny.Context)
	for i := range x {
		x[i], y[i] = int64(rng.IntN(tiny.Vocab)), int64(rng.IntN(tiny.Vocab))
	}
	return x, y
}

// logits returns the model's logits of x, without a graph.
func logits(dev *device.Device, m nn.Layer, x []int64) []float64 {
	s := autograd.NewScope()
	defer s.Release()
	var out []float64
	s.NoGrad(func() { out = m.Forward(s.FromInt64s(dev, []int{2, tiny.Context}, x)).Float64s() })
	return out
}

// loss returns the model's loss of (x, y) built in s.
func loss(s *autograd.Scope, dev *device.Device, m interface {
	Loss(idx, targets *autograd.Tensor) *autograd.Tensor
}, x, y []int64) *autograd.Tensor {
	return m.Loss(s.FromInt64s(dev, []int{2, tiny.Context}, x), s.FromInt64s(dev, []int{len(y)}, y))
}

// randomB fills every adapter's B with N(0, 0.1²) so the update is not 0.
func randomB(m *lora.GPT, seed uint64) {
	rng := rand.New(rand.NewPCG(seed, 3))
	for _, a := range m.Adapters {
		v := make([]float64, a.B.Len())
		for i := range v {
			v[i] = 0.1 * rng.NormFloat64()
		}
		a.B.SetFloat64s(v)
	}
}

// maxDiff returns max |a−b|.
func maxDiff(a, b []float64) float64 {
	var d float64
	for i := range a {
		d = max(d, math.Abs(a[i]-b[i]))
	}
	return d
}

// frozenBits returns the bits of every frozen tensor of m by name (F32,
// F64 and I8 values widen to float64 exactly, so equal bits here are equal
// bits there).
func frozenBits(m nn.Module) map[string][]uint64 {
	out := map[string][]uint64{}
	for _, p := range m.Params() {
		if p.Buffer {
			for _, v := range p.T.Float64s() {
				out[p.Name] = append(out[p.Name], math.Float64bits(v))
			}
		}
	}
	return out
}
