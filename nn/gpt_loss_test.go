package nn_test

import (
	"math"
	"testing"

	"github.com/headroom-ml/headroom/autograd"
	"github.com/headroom-ml/headroom/device"
	"github.com/headroom-ml/headroom/device/meta"
	"github.com/headroom-ml/headroom/dtype"
	"github.com/headroom-ml/headroom/nn"
)

// gptLossAndGrads runs one forward and backward of g.Loss in F64 on dev
// and returns the loss and every parameter's gradient.
func gptLossAndGrads(t *testing.T, dev *device.Device, g *nn.GPT, idx, tgt []int64, shape []int) (float64, [][]float64) {
	t.Helper()
	s := autograd.NewScope()
	defer s.Release()
	loss := g.Loss(s.FromInt64s(dev, shape, idx), s.FromInt64s(dev, []int{len(tgt)}, tgt))
	l := loss.Item()
	if err := loss.Backward(); err != nil {
		t.Fatal(err)
	}
	var grads [][]float64
	for _, p := range g.Params() {
		grads = append(grads, p.T.Grad().Float64s())
		p.T.ZeroGrad()
	}
	return l, grads
}

// TestGPTFusedLossEqualsPlain holds the fused loss (LM head and
// cross-entropy in row chunks) against Forward + CrossEntropy in F64, with
// the tied and the untied head: the loss and every gradient agree to 1e-12
// relative (the reduction order differs between chunks).
func TestGPTFusedLossEqualsPlain(t *testing.T) {
	for _, tied := range []bool{true, false} {
		cfg := nn.GPTConfig{Vocab: 13, Context: 6, Layers: 2, Heads: 2, Width: 8, TieEmbeddings: tied}
		dev, b := f64(3)
		g, err := nn.NewGPT(b, "gpt", cfg, nil)
		if err != nil {
			t.Fatal(err)
		}
		fill(g, 4, -0.5, 0.5)
		idx, tgt := randIdx(5, 2*6, 13), randIdx(6, 2*6, 13)
		plain, pg := gptLossAndGrads(t, dev, g, idx, tgt, []int{2, 6})
		g.FusedLoss = true
		fused, fg := gptLossAndGrads(t, dev, g, idx, tgt, []int{2, 6})
		if d := math.Abs(fused - plain); d > 1e-12*math.Abs(plain) {
			t.Errorf("tied %v: fused loss %.17g, plain %.17g", tied, fused, plain)
		}
		for i, p := range g.Params() {
			for j := range pg[i] {
				if d := math.Abs(fg[i][j] - pg[i][j]); d > 1e-12*(1+math.Abs(pg[i][j])) {
					t.Fatalf("tied %v: %s[%d]: fused grad %.17g, plain %.17g", tied, p.Name, j, fg[i][j], pg[i][j])
				}
			}
		}
		nn.Release(g)
	}
}

// TestGPTFusedLossRemovesLogits measures on meta, at GPT-2's vocabulary
// and the 8×1024 tokens, the whole peak of a forward and backward
// (every tag: the fused loss's chunk buffers are workspace) with and
// without the fused loss: the fused one is lower by at least 95% of the
// logits' bytes (B·T·V·4 at F32).
func TestGPTFusedLossRemovesLogits(t *testing.T) {
	cfg := nn.GPTConfig{Vocab: 50257, Context: 1024, Layers: 1, Heads: 2, Width: 64, TieEmbeddings: true}
	B, T := 8, 1024
	peak := func(fused bool) int64 {
		dev := meta.New(0, device.Options{})
		g, err := nn.NewGPT(nn.NewBuilder(dev, dtype.F32, 1), "gpt", cfg, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer nn.Release(g)
		g.FusedLoss = fused
		dev.ResetPeak()
		s := autograd.NewScope()
		loss := g.Loss(s.Zeros(dev, dtype.I64, B, T), s.Zeros(dev, dtype.I64, B*T))
		if err := loss.Backward(); err != nil {
			t.Fatal(err)
		}
		s.Release()
		return dev.Stats().Requested.Peak
	}
	plain, fused := peak(false), peak(true)
	logits := int64(B * T * cfg.Vocab * 4)
	t.Logf("peak plain %d B, fused %d B, logits %d B", plain, fused, logits)
	if plain-fused < logits*95/100 {
		t.Errorf("fused loss saved %d B of the peak; want ≥ 95%% of the logits' %d B", plain-fused, logits)
	}
}
