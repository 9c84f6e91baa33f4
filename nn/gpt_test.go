package nn_test

import (
	"errors"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/headroom-ml/headroom/autograd"
	"github.com/headroom-ml/headroom/device"
	"github.com/headroom-ml/headroom/device/meta"
	"github.com/headroom-ml/headroom/dtype"
	"github.com/headroom-ml/headroom/nn"
)

func TestCausalSelfAttentionGrad(t *testing.T) {
	dev, b := f64(1)
	a := nn.NewCausalSelfAttention(b, "attn", 4, 2, 0, nil, true)
	defer nn.Release(a)
	x := randInput(dev, 2, 2, 3, 4)
	defer x.Release()
	gradcheck(t, a, x, layerOf(a))
}

// TestCausalSelfAttentionIsCausal checks that changing the last token
// changes only the last position's output.
func TestCausalSelfAttentionIsCausal(t *testing.T) {
	dev, b := f64(1)
	a := nn.NewCausalSelfAttention(b, "attn", 4, 2, 0, nil, true)
	defer nn.Release(a)
	s := autograd.NewScope()
	defer s.Release()
	xs := make([]float64, 3*4)
	for i := range xs {
		xs[i] = math.Sin(float64(i))
	}
	y1 := a.Forward(s.FromFloat64s(dev, []int{1, 3, 4}, xs)).Float64s()
	xs[11] += 1
	y2 := a.Forward(s.FromFloat64s(dev, []int{1, 3, 4}, xs)).Float64s()
	if !equalF(y1[:8], y2[:8]) || equalF(y1[8:], y2[8:]) {
		t.Errorf("changing token 2 changed outputs %v → %v: want only the last row changed", y1, y2)
	}
}

func TestMLPGrad(t *testing.T) {
	dev, b := f64(1)
	m := nn.NewMLP(b, "mlp", 3, 5, 0, nil, true)
	defer nn.Release(m)
	x := randInput(dev, 2, 2, 2, 3)
	defer x.Release()
	gradcheck(t, m, x, layerOf(m))
}

func TestGPTBlockGrad(t *testing.T) {
	for _, bias := range []bool{true, false} {
		dev, b := f64(1)
		k := nn.NewGPTBlock(b, "h.0", nn.GPTConfig{Width: 4, Heads: 2, Layers: 2, Bias: bias}, nil)
		fill(k, 2, -0.5, 0.5) // larger than GPT-2's 0.02, so every path matters
		x := randInput(dev, 2, 2, 3, 4)
		gradcheck(t, k, x, layerOf(k))
		x.Release()
		nn.Release(k)
	}
}

// gpt2Small is GPT-2 small's configuration (124M).
var gpt2Small = nn.GPTConfig{Vocab: 50257, Context: 1024, Layers: 12, Heads: 12, Width: 768, Bias: true, TieEmbeddings: true}

// TestGPT2SmallParams checks Hugging Face's count for gpt2, 124,439,808,
// built on the meta device, and the memory formula of the doc.
func TestGPT2SmallParams(t *testing.T) {
	dev := meta.New(0, device.Options{})
	g, err := nn.NewGPT(nn.NewBuilder(dev, dtype.F32, 1), "", gpt2Small, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer nn.Release(g)
	if got := nn.Count(g); got != 124_439_808 {
		t.Errorf("GPT-2 small: %d parameters, want 124,439,808", got)
	}
	if got, want := dev.Stats().ByTag[device.Parameter].Current, nn.ParamBytes(g); got != want || want != 4*124_439_808 {
		t.Errorf("device holds %d parameter bytes, ParamBytes %d, want both %d", got, want, 4*124_439_808)
	}
	ps := g.Params()
	if ps[0].Name != "transformer.wte.weight" || ps[len(ps)-1].Name != "transformer.ln_f.bias" {
		t.Errorf("params run %s … %s, want transformer.wte.weight … transformer.ln_f.bias (tied: no lm_head)", ps[0].Name, ps[len(ps)-1].Name)
	}
	s := autograd.NewScope()
	defer s.Release()
	y := g.Forward(s.Zeros(dev, dtype.I64, 2, 1024))
	if got := y.Shape(); !equal(got, []int{2, 1024, 50257}) {
		t.Errorf("logits %v, want [2 1024 50257]", got)
	}
}

// gptParamBytes is the doc's parameter formula.
func gptParamBytes(c nn.GPTConfig, size int64) int64 {
	V, T, L, C := int64(c.Vocab), int64(c.Context), int64(c.Layers), int64(c.Width)
	block, lnf := 12*C*C+13*C, 2*C
	if !c.Bias {
		block, lnf = 12*C*C+2*C, C
	}
	if c.ShareLayers {
		L = 1
	}
	n := V*C + T*C + L*block + lnf
	if !c.TieEmbeddings {
		n += V * C
	}
	return n * size
}

func TestGPTForward(t *testing.T) {
	cfg := nn.GPTConfig{Vocab: 11, Context: 6, Layers: 2, Heads: 2, Width: 8, Dropout: 0.1}
	dev, b := f64(1)
	g, err := nn.NewGPT(b, "gpt", cfg, autograd.NewGenerator(1))
	if err != nil {
		t.Fatal(err)
	}
	defer nn.Release(g)
	if got, want := nn.ParamBytes(g), gptParamBytes(cfg, 8); got != want {
		t.Errorf("ParamBytes %d, want %d", got, want)
	}
	if g.Head == nil || g.Params()[len(g.Params())-1].Name != "gpt.lm_head.weight" {
		t.Errorf("untied model: want gpt.lm_head.weight last, got %v", names(g.Params()))
	}
	s := autograd.NewScope()
	defer s.Release()
	idx := s.FromInt64s(dev, []int{2, 5}, []int64{1, 2, 3, 4, 5, 10, 9, 8, 7, 6})
	if got := g.Forward(idx).Shape(); !equal(got, []int{2, 5, 11}) {
		t.Errorf("logits %v, want [2 5 11]", got)
	}
	// Too long a sequence is a clear error.
	long := s.Zeros(dev, dtype.I64, 1, 7)
	err = autograd.Try(func() { g.Forward(long) })
	var ae *autograd.Error
	if !errors.As(err, &ae) {
		t.Fatalf("T = 7 > context 6: error %v, want *autograd.Error", err)
	}
	t.Logf("T > context: %v", err)
	// Free-standing indices cannot reach the position table's gradient.
	free := autograd.FromInt64s(dev, []int{1, 2}, []int64{1, 2})
	defer free.Release()
	if err := autograd.Try(func() { g.Forward(free) }); err == nil {
		t.Error("free-standing indices: no error")
	}
}

func TestNewGPTErrors(t *testing.T) {
	dev := meta.New(0, device.Options{})
	b := nn.NewBuilder(dev, dtype.F32, 1)
	for _, c := range []nn.GPTConfig{
		{Vocab: 10, Context: 4, Layers: 1, Heads: 3, Width: 8},
		{Vocab: 10, Context: 4, Layers: 0, Heads: 2, Width: 8},
		{Vocab: 10, Context: 4, Layers: 1, Heads: 2, Width: 8, Dropout: 1},
		{Vocab: 10, Context: 4, Layers: 1, Heads: 2, Width: 8, Dropout: 0.1}, // nil generator
	} {
		if _, err := nn.NewGPT(b, "g", c, nil); err == nil {
			t.Errorf("NewGPT(%+v): no error", c)
		} else {
			t.Logf("%v", err)
		}
	}
	// Out of memory half-way: an error, and nothing left allocated.
	small := meta.New(1, device.Options{Capacity: 200 << 20})
	_, err := nn.NewGPT(nn.NewBuilder(small, dtype.F32, 1), "", gpt2Small, nil)
	if !autograd.IsOOM(err) {
		t.Fatalf("GPT-2 in 200 MiB: error %v, want an OOM", err)
	}
	if got := small.CurrentBytes(); got != 0 {
		t.Errorf("failed build left %d bytes allocated: %v", got, small.Live())
	}
}

// TestGPTDeterminism builds twice from one seed (identical parameters),
// once from another (different), and checks that eval mode turns dropout
// off: two eval forwards agree, two training forwards do not.
func TestGPTDeterminism(t *testing.T) {
	cfg := nn.GPTConfig{Vocab: 7, Context: 4, Layers: 2, Heads: 2, Width: 4, Dropout: 0.5, Bias: true}
	build := func(seed uint64) *nn.GPT {
		_, b := f64(seed)
		g, err := nn.NewGPT(b, "", cfg, autograd.NewGenerator(seed))
		if err != nil {
			t.Fatal(err)
		}
		return g
	}
	g1, g2, g3 := build(5), build(5), build(6)
	defer nn.Release(g1)
	defer nn.Release(g2)
	defer nn.Release(g3)
	v1, v2, v3 := values(g1), values(g2), values(g3)
	for i := range v1 {
		if !equalF(v1[i], v2[i]) {
			t.Errorf("same seed: %s differs", g1.Params()[i].Name)
		}
	}
	if equalF(v1[0], v3[0]) {
		t.Error("different seeds gave the same token embedding")
	}
	forward := func() []float64 {
		s := autograd.NewScope()
		defer s.Release()
		return g1.Forward(s.FromInt64s(g1.Wte.Weight.Device(), []int{1, 3}, []int64{1, 6, 2})).Float64s()
	}
	if a, b := forward(), forward(); equalF(a, b) {
		t.Error("training mode with dropout 0.5: two forwards agree")
	}
	g1.Train(false)
	a, b := forward(), forward()
	if !equalF(a, b) {
		t.Error("eval mode: two forwards differ")
	}
	// Eval equals training with dropout 0 on the same weights.
	cfg0 := cfg
	cfg0.Dropout = 0
	_, b0 := f64(5)
	g0, err := nn.NewGPT(b0, "", cfg0, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer nn.Release(g0)
	s := autograd.NewScope()
	defer s.Release()
	c := g0.Forward(s.FromInt64s(g0.Wte.Weight.Device(), []int{1, 3}, []int64{1, 6, 2})).Float64s()
	if !equalF(a, c) {
		t.Error("eval with dropout 0.5 differs from a dropout-free model with the same weights")
	}
}

// TestGPTInit checks GPT-2's initialisation statistics: N(0, 0.02²) for
// embeddings and Linear weights, 0.02/√(2·Layers) for the residual
// projections, zero biases, LayerNorm weights 1.
func TestGPTInit(t *testing.T) {
	cfg := nn.GPTConfig{Vocab: 500, Context: 64, Layers: 8, Heads: 4, Width: 64, Bias: true}
	_, b := f64(1)
	g, err := nn.NewGPT(b, "", cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer nn.Release(g)
	proj := 0.02 / math.Sqrt(16)
	for _, p := range g.Params() {
		v := p.T.Float64s()
		mean, sd := meanStd(v)
		var wantMean, wantStd float64
		switch name := p.Name; {
		case strings.HasSuffix(name, "c_proj.weight"):
			wantStd = proj
		case strings.HasSuffix(name, "ln_1.weight"), strings.HasSuffix(name, "ln_2.weight"), strings.HasSuffix(name, "ln_f.weight"):
			wantMean = 1
		case strings.HasSuffix(name, ".weight"):
			wantStd = 0.02
		}
		if math.Abs(mean-wantMean) > 0.1*max(wantStd, 1e-9)+1e-12 || math.Abs(sd-wantStd) > 0.1*wantStd+1e-12 {
			t.Errorf("%s: mean %.5f std %.5f, want %g and %g", p.Name, mean, sd, wantMean, wantStd)
		}
	}
}

// randIdx returns seeded token indices in [0, v).
func randIdx(seed uint64, n, v int) []int64 {
	rng := rand.New(rand.NewPCG(seed, 1))
	out := make([]int64, n)
	for i := range out {
		out[i] = int64(rng.IntN(v))
	}
	return out
}
