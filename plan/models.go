package plan

import (
	"fmt"
	"sort"

	"github.com/headroom-ml/headroom/autograd"
	"github.com/headroom-ml/headroom/nn"
)

// Model is a model the planner knows by name.
type Model struct {
	Name string
	// Kind is "resnet" or "gpt".
	Kind string
	// GPT is the configuration of a GPT; ResNet builds a ResNet.
	GPT    nn.GPTConfig
	ResNet func(b *nn.Builder, name string, cfg nn.ResNetConfig) (*nn.ResNet, error)
	// Image size, channels and classes of a ResNet's input.
	Image, Channels, Classes int
	Stem                     string
	// Batch is the default global batch.
	Batch int
	// Optimizer is the default: "adamw" for GPTs, "sgd" (momentum) for
	// ResNets, as the examples train them.
	Optimizer string
	Note      string
}

func gpt(name string, l, h, c, ctx, vocab int, note string) Model {
	return Model{Name: name, Kind: "gpt", Batch: 1, Optimizer: "adamw", Note: note,
		GPT: nn.GPTConfig{Vocab: vocab, Context: ctx, Layers: l, Heads: h, Width: c, Bias: true, TieEmbeddings: true}}
}

func resnet(name string, f func(*nn.Builder, string, nn.ResNetConfig) (*nn.ResNet, error), note string) Model {
	return Model{Name: name, Kind: "resnet", ResNet: f, Image: 224, Channels: 3, Classes: 1000, Stem: "imagenet",
		Batch: 32, Optimizer: "sgd", Note: note}
}

var models = map[string]Model{}

func init() {
	for _, m := range []Model{
		resnet("resnet18", nn.ResNet18, "torchvision ResNet-18, 224×224, 1000 classes"),
		resnet("resnet34", nn.ResNet34, "torchvision ResNet-34"),
		resnet("resnet50", nn.ResNet50, "torchvision ResNet-50"),
		resnet("resnet101", nn.ResNet101, "torchvision ResNet-101"),
		resnet("resnet152", nn.ResNet152, "torchvision ResNet-152"),
		{Name: "small", Kind: "resnet", ResNet: nn.SmallResNet, Image: 28, Channels: 1, Classes: 10, Stem: "small", Batch: 128,
			Optimizer: "sgd", Note: "the resnet example's default: SmallResNet on 28×28 MNIST"},
		gpt("gpt2", 12, 12, 768, 1024, 50257, "GPT-2 small, 124M"),
		gpt("gpt2-medium", 24, 16, 1024, 1024, 50257, "GPT-2 medium, 355M"),
		gpt("gpt2-large", 36, 20, 1280, 1024, 50257, "GPT-2 large, 774M"),
		gpt("gpt2-xl", 48, 25, 1600, 1024, 50257, "GPT-2 XL, 1.5B"),
		gpt("gpt-7.5b", 36, 32, 4096, 1024, 50257, "a 7.5B GPT (36 layers × 4096): the ZeRO paper's Figure 1 size"),
		gpt("gpt3-175b", 96, 96, 12288, 2048, 50257, "GPT-3 175B (96 layers × 12288, context 2048)"),
		{Name: "transformer", Kind: "gpt", Batch: 32, Optimizer: "adamw", Note: "the transformer example's default: 4 layers × 128, context 64, bytes",
			GPT: nn.GPTConfig{Vocab: 256, Context: 64, Layers: 4, Heads: 4, Width: 128, Bias: true, TieEmbeddings: true}},
	} {
		models[m.Name] = m
	}
}

// Lookup returns the model named name.
func Lookup(name string) (Model, error) {
	m, ok := models[name]
	if !ok {
		return Model{}, fmt.Errorf("plan: unknown model %q (want one of %v)", name, Names())
	}
	return m, nil
}

// Names lists the known models.
func Names() []string {
	var ns []string
	for n := range models {
		ns = append(ns, n)
	}
	sort.Strings(ns)
	return ns
}

// build makes the model on b's device: the module, its block list hook
// and its forward from a scope and a batch of b samples.
func (m Model) build(b *nn.Builder, gen *autograd.Generator, cfg nn.GPTConfig) (nn.Module, *func([]nn.Layer, *autograd.Tensor) *autograd.Tensor, error) {
	if m.Kind == "gpt" {
		g, err := nn.NewGPT(b, "gpt", cfg, gen)
		if err != nil {
			return nil, nil, err
		}
		return g, &g.RunBlocks, nil
	}
	r, err := m.ResNet(b, "resnet", nn.ResNetConfig{Stem: m.Stem, InChannels: m.Channels, Classes: m.Classes})
	if err != nil {
		return nil, nil, err
	}
	return r, &r.RunBlocks, nil
}
