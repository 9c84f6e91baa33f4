package prune_test

import (
	"fmt"

	"github.com/headroom-ml/headroom/device"
	"github.com/headroom-ml/headroom/device/cpu"
	"github.com/headroom-ml/headroom/device/meta"
	"github.com/headroom-ml/headroom/dtype"
	"github.com/headroom-ml/headroom/nn"
	"github.com/headroom-ml/headroom/prune"
)

// Remove 30% of the channels inside each residual block of the MNIST
// ResNet: parameter bytes (measured by the allocator) and FLOPs go down.
func ExampleResNet() {
	dev := cpu.New(0, device.Options{})
	m, err := nn.SmallResNet(nn.NewBuilder(dev, dtype.F32, 1), "", nn.ResNetConfig{InChannels: 1})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer nn.Release(m)
	rep, err := prune.ResNet(m, 0.3, prune.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	// An optimizer made before pruning must be released, and a new one
	// made over m.Params(), before fine-tuning.
	fmt.Print(rep.Summary())
	fmt.Println("allocator's parameter bytes:", dev.Stats().Tag(device.Parameter).Current)
	for _, l := range rep.Layers {
		fmt.Printf("%s: %d → %d %s\n", l.Name, l.Before, l.After, l.Unit)
	}
	// Output:
	// parameters       77754 → 55510 (71.4%)
	// parameter bytes  313704 → 224456 (71.6%)
	// FLOPs at 28×28   18691840 → 13131712 (70.3%)
	// allocator's parameter bytes: 224456
	// layer1.0.conv1: 16 → 11 channels
	// layer2.0.conv1: 32 → 22 channels
	// layer3.0.conv1: 64 → 45 channels
}

// Prune half the heads and 30% of the MLP width of GPT-2 small, on the
// meta device (shapes and bytes, no values).
func ExampleGPT() {
	dev := meta.New(0, device.Options{})
	cfg := nn.GPTConfig{Vocab: 50257, Context: 1024, Layers: 12, Heads: 12, Width: 768, Bias: true, TieEmbeddings: true}
	g, err := nn.NewGPT(nn.NewBuilder(dev, dtype.F32, 1), "", cfg, nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer nn.Release(g)
	rep, err := prune.GPT(g, 0.5, 0.3, prune.Options{Tokens: 1024})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Print(rep.Summary())
	fmt.Println("block 0:", g.Blocks[0].Attn.Heads, "heads,", g.Blocks[0].MLP.Hidden, "hidden units")
	// Output:
	// parameters       124439808 → 93264840 (74.9%)
	// parameter bytes  497759232 → 373059360 (74.9%)
	// FLOPs at T=1024  291648307200 → 208525590528 (71.5%)
	// block 0: 6 heads, 2150 hidden units
}
