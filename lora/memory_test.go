package lora_test

import (
	"math/rand/v2"
	"testing"

	"github.com/headroom-ml/headroom/autograd"
	"github.com/headroom-ml/headroom/device"
	"github.com/headroom-ml/headroom/device/cpu"
	"github.com/headroom-ml/headroom/dtype"
	"github.com/headroom-ml/headroom/lora"
	"github.com/headroom-ml/headroom/nn"
	"github.com/headroom-ml/headroom/optim"
)

// example is the transformer example's default model (examples/transformer:
// 4 blocks of width 128, 4 heads, context 64, bytes, tied embeddings).
var example = nn.GPTConfig{Vocab: 256, Context: 64, Layers: 4, Heads: 4, Width: 128, Bias: true, TieEmbeddings: true}

// stepBytes runs one AdamW step of m (all of nn.Trainable(m)) on cpu and
// returns the Gradient and Optimizer bytes the allocator holds after it.
func stepBytes(t *testing.T, dev *device.Device, m interface {
	nn.Module
	Loss(idx, targets *autograd.Tensor) *autograd.Tensor
}) (grad, state int64) {
	t.Helper()
	opt, err := optim.NewAdamW(nn.Trainable(m), optim.AdamConfig{LR: 1e-3})
	if err != nil {
		t.Fatal(err)
	}
	defer opt.Release()
	rng := rand.New(rand.NewPCG(1, 1))
	x, y := make([]int64, 2*example.Context), make([]int64, 2*example.Context)
	for i := range x {
		x[i], y[i] = int64(rng.IntN(256)), int64(rng.IntN(256))
	}
	s := autograd.NewScope()
	l := m.Loss(s.FromInt64s(dev, []int{2, example.Context}, x), s.FromInt64s(dev, []int{len(y)}, y))
	if err := l.Backward(); err != nil {
		t.Fatal(err)
	}
	s.Release()
	if err := opt.Step(); err != nil {
		t.Fatal(err)
	}
	st := dev.Stats()
	defer opt.ZeroGrad()
	return st.ByTag[device.Gradient].Current, st.ByTag[device.Optimizer].Current
}

// TestExampleBytes measures one step of full fine-tuning and of LoRA r = 8
// on every block Linear (float and int8 base) of the transformer example's
// model on cpu: gradients + AdamW state are 12·P bytes and 12·Σ_a with
// Σ_a = 16·L·r·C (the package's formula), and LoRA's are ≤ 10% of full
// fine-tuning's.
func TestExampleBytes(t *testing.T) {
	dev := cpu.New(0, device.Options{})
	g, err := nn.NewGPT(nn.NewBuilder(dev, dtype.F32, 1), "gpt", example, nil)
	if err != nil {
		t.Fatal(err)
	}
	p := nn.Count(g)
	fg, fo := stepBytes(t, dev, g)
	if fg+fo != 12*p {
		t.Errorf("full fine-tuning: gradients %d + AdamW %d bytes; want 12·P = %d", fg, fo, 12*p)
	}
	nn.Release(g)
	const r = 8
	for _, base := range []lora.Base{lora.Float, lora.Int8} {
		dev := cpu.New(0, device.Options{})
		g, err := nn.NewGPT(nn.NewBuilder(dev, dtype.F32, 1), "gpt", example, nil)
		if err != nil {
			t.Fatal(err)
		}
		m := apply(t, g, lora.Config{Rank: r, Base: base})
		lg, lo := stepBytes(t, dev, m)
		want := int64(12 * 16 * example.Layers * r * example.Width)
		if lg+lo != want {
			t.Errorf("%v base: gradients %d + AdamW %d bytes; want 12·16·L·r·C = %d", base, lg, lo, want)
		}
		pl, outs := int64(12*example.Layers*example.Width*example.Width), int64(9*example.Layers*example.Width)
		wantP := 4 * (p + int64(16*example.Layers*r*example.Width))
		if base == lora.Int8 {
			wantP = 4*(p-pl) + pl + 4*outs + int64(4*16*example.Layers*r*example.Width)
		}
		if got := dev.Stats().ByTag[device.Parameter].Current; got != wantP {
			t.Errorf("%v base: parameters %d bytes; want the package's formula's %d", base, got, wantP)
		}
		ratio := float64(lg+lo) / float64(fg+fo)
		if ratio > 0.10 {
			t.Errorf("%v base: LoRA r=%d holds %.4f of full fine-tuning's gradient+optimizer bytes; want ≤ 0.10", base, r, ratio)
		}
		t.Logf("%v base: LoRA r=%d gradient+AdamW %d bytes, full fine-tuning %d: %.4f; parameters %d bytes", base, r, lg+lo, fg+fo, ratio, dev.Stats().ByTag[device.Parameter].Current)
		nn.Release(m)
	}
}
