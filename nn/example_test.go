package nn_test

import (
	"fmt"

	"github.com/headroom-ml/headroom/autograd"
	"github.com/headroom-ml/headroom/device"
	"github.com/headroom-ml/headroom/device/cpu"
	"github.com/headroom-ml/headroom/device/meta"
	"github.com/headroom-ml/headroom/dtype"
	"github.com/headroom-ml/headroom/nn"
)

// Build the small ResNet for MNIST and see what its parameters cost.
func ExampleSmallResNet() {
	dev := cpu.New(0, device.Options{})
	m, err := nn.SmallResNet(nn.NewBuilder(dev, dtype.F32, 1), "", nn.ResNetConfig{InChannels: 1})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer nn.Release(m)
	fmt.Printf("%d parameters, %d bytes with the BatchNorm buffers\n", nn.Count(m), nn.ParamBytes(m))

	s := autograd.NewScope()
	defer s.Release()
	logits := m.Forward(s.Zeros(dev, dtype.F32, 8, 1, 28, 28))
	fmt.Println("logits", logits.Shape())
	// Output:
	// 77754 parameters, 313704 bytes with the BatchNorm buffers
	// logits [8 10]
}

// Run a tiny GPT on a batch of token indices.
func ExampleGPT_Forward() {
	dev := cpu.New(0, device.Options{})
	cfg := nn.GPTConfig{Vocab: 64, Context: 16, Layers: 2, Heads: 2, Width: 32, Bias: true, TieEmbeddings: true}
	g, err := nn.NewGPT(nn.NewBuilder(dev, dtype.F32, 1), "", cfg, nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer nn.Release(g)

	s := autograd.NewScope()
	defer s.Release()
	idx := s.FromInt64s(dev, []int{2, 5}, []int64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10})
	logits := g.Forward(idx)
	fmt.Println("parameters", nn.Count(g))
	fmt.Println("logits", logits.Shape())
	// Output:
	// parameters 28032
	// logits [2 5 64]
}

// Size GPT-2 small without holding its weights: the meta device allocates
// and accounts exactly, and stores nothing.
func ExampleNewGPT() {
	dev := meta.New(0, device.Options{})
	cfg := nn.GPTConfig{Vocab: 50257, Context: 1024, Layers: 12, Heads: 12, Width: 768, Bias: true, TieEmbeddings: true}
	g, err := nn.NewGPT(nn.NewBuilder(dev, dtype.F32, 1), "", cfg, nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer nn.Release(g)
	fmt.Println(nn.Count(g), "parameters,", device.FormatBytes(nn.ParamBytes(g)))

	cfg.ShareLayers = true // ALBERT-style: one block's weights for all 12 layers
	a, err := nn.NewGPT(nn.NewBuilder(dev, dtype.F32, 1), "", cfg, nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer nn.Release(a)
	fmt.Println(nn.Count(a), "parameters shared,", device.FormatBytes(nn.ParamBytes(a)))
	// Output:
	// 124439808 parameters, 474.70 MiB
	// 46473216 parameters shared, 177.28 MiB
}
