package checkpoint_test

import (
	"fmt"
	"math"
	"testing"

	"github.com/headroom-ml/headroom/autograd"
	"github.com/headroom-ml/headroom/checkpoint"
	"github.com/headroom-ml/headroom/device"
	"github.com/headroom-ml/headroom/device/cpu"
	"github.com/headroom-ml/headroom/dtype"
	"github.com/headroom-ml/headroom/internal/cputime"
	"github.com/headroom-ml/headroom/nn"
)

// BenchmarkSelectiveGPTBlocks times forward + backward of 8 GPT blocks at
// the transformer example's size (width 128, 4 heads, context 64, batch
// 32), without dropout (the example's default) and with dropout 0.1:
// plain, with every block Selective under DefaultPolicy and under
// SavedOnly, and with every block checkpointed. Alternate the variants
// (-bench 'SelectiveGPTBlocks/p0/plain$', then …/selective$, …) for
// ratios on a shared machine.
func BenchmarkSelectiveGPTBlocks(b *testing.B) {
	for _, p := range []float64{0, 0.1} {
		b.Run(fmt.Sprintf("p%g", p*10), func(b *testing.B) { benchSelectiveGPTBlocks(b, p) })
	}
}

func benchSelectiveGPTBlocks(b *testing.B, dropout float64) {
	dev := cpu.New(0, device.Options{})
	ls := benchGPTBlocks(dev, dropout)
	m := nn.NewSequential(ls...)
	defer nn.Release(m)
	x := make([]float64, 32*64*128)
	for i := range x {
		x[i] = math.Sin(float64(i) * 0.3)
	}
	lean := &checkpoint.Policy{Save: checkpoint.DefaultPolicy().Save, SavedOnly: true}
	variants := []struct {
		name string
		run  func(*autograd.Tensor) *autograd.Tensor
	}{
		{"plain", m.Forward},
		{"selective", func(h *autograd.Tensor) *autograd.Tensor { return checkpoint.SelectiveEach(ls, nil, h) }},
		{"saved_only", func(h *autograd.Tensor) *autograd.Tensor { return checkpoint.SelectiveEach(ls, lean, h) }},
		{"checkpoint_each", func(h *autograd.Tensor) *autograd.Tensor { return checkpoint.Sequential(ls, len(ls), h) }},
	}
	for _, v := range variants {
		b.Run(v.name, func(b *testing.B) {
			cpu0 := cputime.Process()
			for b.Loop() {
				s := autograd.NewScope()
				xs := s.FromFloat64s(dev, []int{32, 64, 128}, x).Cast(dtype.F32)
				if err := v.run(xs).Pow(2).Mean(false).Backward(); err != nil {
					b.Fatal(err)
				}
				s.Release()
				for _, p := range m.Params() {
					if !p.Buffer {
						p.T.ZeroGrad()
					}
				}
			}
			b.ReportMetric(float64(cputime.Process()-cpu0)/float64(b.N), "cpu-ns/op")
			b.ReportMetric(float64(dev.Stats().ByTag[device.Activation].Peak), "act-peak-B")
			dev.ResetPeak()
		})
	}
}

// benchGPTBlocks makes 8 GPT blocks of the transformer example's size
// (width 128, 4 heads, context 64) with dropout on dev.
func benchGPTBlocks(dev *device.Device, dropout float64) []nn.Layer {
	cfg := nn.GPTConfig{Vocab: 256, Context: 64, Layers: 8, Heads: 4, Width: 128, Dropout: dropout, Bias: true}
	bl := nn.NewBuilder(dev, dtype.F32, 1)
	gen := autograd.NewGenerator(3)
	var ls []nn.Layer
	for i := range cfg.Layers {
		ls = append(ls, nn.NewGPTBlock(bl, "h"+string(rune('0'+i)), cfg, gen))
	}
	return ls
}
