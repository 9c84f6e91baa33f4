package quant_test

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/headroom-ml/headroom/autograd"
	"github.com/headroom-ml/headroom/device"
	"github.com/headroom-ml/headroom/device/cpu"
	"github.com/headroom-ml/headroom/dtype"
	"github.com/headroom-ml/headroom/nn"
	"github.com/headroom-ml/headroom/quant"
)

// versus alternates the forward of f and q on x (shape), see versusOn.
func versus(b *testing.B, dev *device.Device, f, q nn.Layer, shape []int, x []float32) {
	s := autograd.NewScope()
	defer s.Release()
	versusOn(b, s, f, q, s.FromFloat32s(dev, shape, x))
}

// versusOn alternates the forward of the F32 model f and the int8 model q on
// the same input for b.N iterations, keeps the best time of each and
// reports them (ms), their samples/s and the speed-up "x" = f32 time ÷
// int8 time. Alternating and keeping the best makes the ratio meaningful
// when other work shares the machine.
func versusOn(b *testing.B, s *autograd.Scope, f, q nn.Layer, in *autograd.Tensor) {
	run := func(m nn.Layer) time.Duration {
		t0 := time.Now()
		s.NoGrad(func() { m.Forward(in).Release() })
		return time.Since(t0)
	}
	bf, bq := time.Duration(1<<62), time.Duration(1<<62)
	for b.Loop() {
		bf = min(bf, run(f))
		bq = min(bq, run(q))
	}
	n := float64(in.Dim(0))
	b.ReportMetric(float64(bf.Microseconds())/1e3, "f32-ms")
	b.ReportMetric(float64(bq.Microseconds())/1e3, "int8-ms")
	b.ReportMetric(n/bf.Seconds(), "f32-samples/s")
	b.ReportMetric(n/bq.Seconds(), "int8-samples/s")
	b.ReportMetric(bf.Seconds()/bq.Seconds(), "x")
}

// BenchmarkSmallResNet measures inference of SmallResNet on a batch of 64
// MNIST images (64, 1, 28, 28): the F32 nn.ResNet in eval mode against
// its int8 form with dynamic and with static (calibrated) activations.
func BenchmarkSmallResNet(b *testing.B) {
	dev := cpu.New(0, device.Options{})
	r, err := nn.SmallResNet(nn.NewBuilder(dev, dtype.F32, 1), "resnet", nn.ResNetConfig{InChannels: 1})
	if err != nil {
		b.Fatal(err)
	}
	r.Train(false)
	shape := []int{64, 1, 28, 28}
	x := randF32(rand.New(rand.NewPCG(1, 1)), 64*784, 1)
	for _, act := range []quant.Activations{quant.Dynamic, quant.Static} {
		q, err := quant.ConvertResNet(r, quant.Config{Activations: act}, images(dev, 1, 1, 64, 1, 28, 28))
		if err != nil {
			b.Fatal(err)
		}
		b.Run(act.String(), func(b *testing.B) { versus(b, dev, r, q, shape, x) })
		nn.Release(q)
	}
}

// BenchmarkLayer measures single layers, F32 against int8 (dynamic): a
// 3×3 convolution 64→64 on 14×14 maps with batch 64, and a Linear 512→512
// on 4096 rows.
func BenchmarkLayer(b *testing.B) {
	dev := cpu.New(0, device.Options{})
	bl := nn.NewBuilder(dev, dtype.F32, 1)
	rng := rand.New(rand.NewPCG(1, 1))
	conv := nn.NewConv2d(bl, "conv", 64, 64, [2]int{3, 3}, autograd.ConvOptions{Padding: [2]int{1, 1}}, true)
	qc, err := quant.FromConv2d(conv, nil, false, 0)
	if err != nil {
		b.Fatal(err)
	}
	b.Run("conv3x3", func(b *testing.B) {
		versus(b, dev, conv, qc, []int{64, 64, 14, 14}, randF32(rng, 64*64*196, 1))
	})
	lin := nn.NewLinear(bl, "fc", 512, 512, true)
	ql, err := quant.FromLinear(lin, 0)
	if err != nil {
		b.Fatal(err)
	}
	b.Run("linear", func(b *testing.B) {
		versus(b, dev, lin, ql, []int{4096, 512}, randF32(rng, 4096*512, 1))
	})
}

// BenchmarkGPT measures inference of a GPT (4 layers, width 256, 8 heads,
// vocabulary 256, tied head) on 8 sequences of 128 tokens: the F32 model
// against its int8 form (dynamic activations). The Linears are quantized;
// attention, layer norms and the tied head stay F32.
func BenchmarkGPT(b *testing.B) {
	dev := cpu.New(0, device.Options{})
	cfg := nn.GPTConfig{Vocab: 256, Context: 128, Layers: 4, Heads: 8, Width: 256, Bias: true, TieEmbeddings: true}
	g, err := nn.NewGPT(nn.NewBuilder(dev, dtype.F32, 1), "gpt", cfg, nil)
	if err != nil {
		b.Fatal(err)
	}
	q, err := quant.ConvertGPT(g, quant.Config{}, nil)
	if err != nil {
		b.Fatal(err)
	}
	s := autograd.NewScope()
	defer s.Release()
	idx := s.FromInt64s(dev, []int{8, 128}, randTokens(rand.New(rand.NewPCG(1, 1)), 8*128, 256))
	versusOn(b, s, g, q, idx)
	nn.Release(q)
	nn.Release(g)
}
