package nn_test

import (
	"testing"

	"github.com/headroom-ml/headroom/autograd"
	"github.com/headroom-ml/headroom/autograd/autogradtest"
	"github.com/headroom-ml/headroom/device"
	"github.com/headroom-ml/headroom/device/meta"
	"github.com/headroom-ml/headroom/dtype"
	"github.com/headroom-ml/headroom/nn"
)

// TestGPTShareLayersMemory builds a 12-layer ALBERT-style GPT (GPT-2
// small's sizes) on meta: it holds the embeddings, one block, ln_f and the
// head when untied — exactly — and a training step's gradients are held
// once too.
func TestGPTShareLayersMemory(t *testing.T) {
	for _, tied := range []bool{true, false} {
		cfg := gpt2Small
		cfg.ShareLayers, cfg.TieEmbeddings = true, tied
		dev := meta.New(0, device.Options{})
		g, err := nn.NewGPT(nn.NewBuilder(dev, dtype.F32, 1), "", cfg, nil)
		if err != nil {
			t.Fatal(err)
		}
		V, T, C := int64(cfg.Vocab), int64(cfg.Context), int64(cfg.Width)
		want := 4 * (V*C + T*C + (12*C*C + 13*C) + 2*C)
		if !tied {
			want += 4 * V * C
		}
		if got := nn.ParamBytes(g); got != want {
			t.Errorf("tied %v: ParamBytes %d, want %d (embeddings + one block + ln_f + head)", tied, got, want)
		}
		if got := dev.Stats().ByTag[device.Parameter].Current; got != want {
			t.Errorf("tied %v: device holds %d parameter bytes, want %d", tied, got, want)
		}
		if len(g.Blocks) != 12 || g.Blocks[0] != g.Blocks[11] {
			t.Errorf("tied %v: %d blocks, first and last the same: %v", tied, len(g.Blocks), g.Blocks[0] == g.Blocks[len(g.Blocks)-1])
		}
		// One training step: every parameter's gradient, once.
		s := autograd.NewScope()
		idx := s.Zeros(dev, dtype.I64, 2, 32)
		logits := g.Forward(idx)
		loss := autograd.CrossEntropy(logits.Reshape(64, cfg.Vocab), s.Zeros(dev, dtype.I64, 64), autograd.CEOptions{})
		if err := loss.Backward(); err != nil {
			t.Fatal(err)
		}
		s.Release()
		if got := dev.Stats().ByTag[device.Gradient].Current; got != want {
			t.Errorf("tied %v: gradients hold %d bytes after a step, want %d (one per shared tensor)", tied, got, want)
		}
		nn.Release(g)
		if got := dev.CurrentBytes(); got != 0 {
			t.Errorf("after Release %d bytes remain: %v", got, dev.Live())
		}
	}
}

// TestGPTShareLayersGrad checks a tiny 2-layer shared model by central
// differences (perturbing a shared weight moves both layers), then that its
// gradient equals the sum of the two layers' gradients in an unshared
// model with the same weights — for 2 and for 12 layers.
func TestGPTShareLayersGrad(t *testing.T) {
	cfg := nn.GPTConfig{Vocab: 5, Context: 4, Layers: 2, Heads: 2, Width: 4, Bias: true, ShareLayers: true}
	dev, b := f64(1)
	g, err := nn.NewGPT(b, "", cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	fill(g, 4, -0.5, 0.5)
	idx := []int64{1, 4, 0, 2, 2, 3}
	gradcheck(t, g, nil, func(s *autograd.Scope, _ *autograd.Tensor) *autograd.Tensor {
		return g.Forward(s.FromInt64s(dev, []int{2, 3}, idx))
	})
	nn.Release(g)

	for _, layers := range []int{2, 12} {
		cfg.Layers = layers
		shared, err := nn.NewGPT(b, "", cfg, nil)
		if err != nil {
			t.Fatal(err)
		}
		fill(shared, 5, -0.5, 0.5)
		ucfg := cfg
		ucfg.ShareLayers = false
		plain, err := nn.NewGPT(b, "", ucfg, nil)
		if err != nil {
			t.Fatal(err)
		}
		copyParams(plain.Wte, shared.Wte)
		copyParams(plain.Wpe, shared.Wpe)
		copyParams(plain.LNF, shared.LNF)
		copyParams(plain.Head, shared.Head)
		for _, k := range plain.Blocks {
			copyParams(k, shared.Blocks[0])
		}
		step := func(m *nn.GPT) {
			s := autograd.NewScope()
			defer s.Release()
			logits := m.Forward(s.FromInt64s(dev, []int{2, 3}, idx))
			loss := autograd.CrossEntropy(logits.Reshape(6, cfg.Vocab), s.FromInt64s(dev, []int{6}, []int64{0, 1, 2, 3, 4, 0}), autograd.CEOptions{})
			if err := loss.Backward(); err != nil {
				t.Fatal(err)
			}
		}
		step(shared)
		step(plain)
		worst := 0.0
		for i, p := range shared.Blocks[0].Params() {
			sum := make([]float64, p.T.Len())
			for l, k := range plain.Blocks {
				gl := k.Params()[i].T.Grad().Float64s()
				if l == layers-1 && autogradtest.MaxDiff(gl, sum) == 0 {
					t.Errorf("%d layers: %s: the last layer's gradient equals the others' sum: the test cannot tell", layers, p.Name)
				}
				for j := range sum {
					sum[j] += gl[j]
				}
			}
			d := autogradtest.MaxDiff(p.T.Grad().Float64s(), sum)
			worst = max(worst, d)
			if d > 1e-12 {
				t.Errorf("%d layers: %s: shared gradient differs from the sum over layers by %g", layers, p.Name, d)
			}
		}
		t.Logf("%d layers: shared gradients equal the per-layer sums within %.2g", layers, worst)
		nn.Release(shared)
		nn.Release(plain)
	}
	if got := dev.CurrentBytes(); got != 0 {
		t.Errorf("%d bytes remain: %v", got, dev.Live())
	}
}

// copyParams copies src's parameter values into dst's, in order.
func copyParams(dst, src nn.Module) {
	if dst == nil || src == nil {
		return
	}
	sp := src.Params()
	for i, p := range dst.Params() {
		p.T.CopyFrom(sp[i].T)
	}
}
