package nn

import (
	"fmt"
	"slices"

	"github.com/headroom-ml/headroom/autograd"
)

// ResNetConfig describes a ResNet. Blocks is required (or filled by a
// preset); the zero value of every other field is its default.
type ResNetConfig struct {
	// Block is "basic" (BasicBlock, the default) or "bottleneck"
	// (Bottleneck, expansion 4).
	Block string
	// Blocks is the number of blocks of each stage (ResNet-50: 3, 4, 6, 3).
	Blocks []int
	// Widths is each stage's width (a Bottleneck's inner width; its output
	// is 4 times that). nil means 64·2^i for stage i: 64, 128, 256, 512.
	Widths []int
	// Stem is "imagenet" (the default: conv 7×7 stride 2, BN, ReLU, max
	// pool 3×3 stride 2, for 224×224 inputs) or "small" (conv 3×3 stride
	// 1, BN, ReLU, no pool, for 28×28 and 32×32 inputs). The stem has
	// Widths[0] channels.
	Stem string
	// InChannels is the input's channels; 0 means 3.
	InChannels int
	// Classes is the number of outputs; 0 means 1000 (10 for SmallResNet).
	Classes int
}

// resolved returns c with its defaults filled in, or an error naming the
// field out of range.
func (c ResNetConfig) resolved() (ResNetConfig, error) {
	if c.Block == "" {
		c.Block = "basic"
	}
	if c.Stem == "" {
		c.Stem = "imagenet"
	}
	if c.InChannels == 0 {
		c.InChannels = 3
	}
	if c.Classes == 0 {
		c.Classes = 1000
	}
	if c.Widths == nil {
		for i := range c.Blocks {
			c.Widths = append(c.Widths, 64<<i)
		}
	}
	c.Blocks, c.Widths = slices.Clone(c.Blocks), slices.Clone(c.Widths)
	switch {
	case c.Block != "basic" && c.Block != "bottleneck":
		return c, fmt.Errorf("block %q: want \"basic\" or \"bottleneck\"", c.Block)
	case c.Stem != "imagenet" && c.Stem != "small":
		return c, fmt.Errorf("stem %q: want \"imagenet\" or \"small\"", c.Stem)
	case len(c.Blocks) == 0 || slices.Min(c.Blocks) <= 0:
		return c, fmt.Errorf("blocks %v: want at least one stage, each with at least one block", c.Blocks)
	case len(c.Widths) != len(c.Blocks) || slices.Min(c.Widths) <= 0:
		return c, fmt.Errorf("widths %v for blocks %v: want one positive width per stage", c.Widths, c.Blocks)
	case c.InChannels < 0 || c.Classes < 0:
		return c, fmt.Errorf("in channels %d, classes %d: want both > 0", c.InChannels, c.Classes)
	}
	return c, nil
}

// ResNet is a residual network for images (N, InChannels, H, W): a stem,
// stages of residual blocks (the first block of every stage but the first
// has stride 2), adaptive average pooling to 1×1, flatten and a Linear to
// Classes logits. Names follow torchvision under the model's name: conv1,
// bn1, layer{i}.{j}.…, fc.
//
// Memory, with s the dtype's size and cs the BatchNorm statistics' (4, or
// 8 for F64):
//   - parameters: Count(m)·s bytes, plus the BatchNorm buffers, 2·s bytes
//     per BatchNorm channel;
//   - forward leaves the sum of its blocks' activation bytes (BasicBlock,
//     Bottleneck), plus the stem's — its convolution's output (saved by
//     bn1), 2·Widths[0]·cs of statistics, the ReLU's output (saved by it
//     and the max pool or the first block) and, with the ImageNet stem, the
//     max pool's output (saved by the first block) — plus the pooled
//     features N·C·s (C the last block's channels, saved by fc) and the
//     logits N·Classes·s. For SmallResNet on (N, 1, 28, 28) that is
//     N·(2·16·784 + 4·16·784 + 5·32·196 + 5·64·49 + 64 + 10)·s +
//     (2·16 + 4·16 + 6·32 + 6·64)·cs bytes.
type ResNet struct {
	Name   string
	Config ResNetConfig // with defaults filled in
	Conv1  *Conv2d
	BN1    *BatchNorm2d
	Stages [][]Layer // layer1, layer2, …: *BasicBlock or *Bottleneck
	FC     *Linear
	// RunBlocks, when set, runs the stem (conv1, bn1, ReLU and, with the
	// imagenet stem, the max-pool, as one layer) and the residual blocks of
	// all stages in order, instead of a plain loop: activation
	// checkpointing plugs in here (checkpoint.Sequential,
	// checkpoint.Budget.Forward). It must not release its input.
	RunBlocks func(blocks []Layer, x *autograd.Tensor) *autograd.Tensor
}

// NewResNet builds a ResNet named name from cfg on b's device and dtype,
// initialised as torchvision's (convolutions N(0, 2/fanOut), BatchNorm
// weight 1 and bias 0, fc like PyTorch's Linear), in training mode. A
// configuration out of range or running out of memory returns an error and
// leaves nothing allocated.
func NewResNet(b *Builder, name string, cfg ResNetConfig) (*ResNet, error) {
	cfg, err := cfg.resolved()
	if err != nil {
		return nil, fmt.Errorf("nn.NewResNet %s: %w", name, err)
	}
	r := &ResNet{Name: name, Config: cfg}
	err = autograd.Try(func() {
		defer releaseOnPanic(r)
		r.build(b)
	})
	if err != nil {
		return nil, fmt.Errorf("nn.NewResNet %s: %w", name, err)
	}
	return r, nil
}

func (r *ResNet) build(b *Builder) {
	cfg := r.Config
	in := cfg.Widths[0]
	if cfg.Stem == "imagenet" {
		r.Conv1 = newConv(b, join(r.Name, "conv1"), cfg.InChannels, in, 7, 2, 3)
	} else {
		r.Conv1 = newConv(b, join(r.Name, "conv1"), cfg.InChannels, in, 3, 1, 1)
	}
	r.BN1 = NewBatchNorm2d(b, join(r.Name, "bn1"), in, BatchNormOptions{})
	for i, n := range cfg.Blocks {
		r.Stages = append(r.Stages, nil)
		for j := range n {
			stride := 1
			if i > 0 && j == 0 {
				stride = 2
			}
			name := join(r.Name, fmt.Sprintf("layer%d.%d", i+1, j))
			var blk Layer
			if cfg.Block == "basic" {
				blk, in = NewBasicBlock(b, name, in, cfg.Widths[i], stride), cfg.Widths[i]
			} else {
				blk, in = NewBottleneck(b, name, in, cfg.Widths[i], stride), 4*cfg.Widths[i]
			}
			r.Stages[i] = append(r.Stages[i], blk)
		}
	}
	r.FC = newLinear(b, join(r.Name, "fc"), in, cfg.Classes, true, linearInit{})
}

// Forward returns the logits (N, Classes) for images x (N, InChannels, H,
// W).
func (r *ResNet) Forward(x *autograd.Tensor) *autograd.Tensor {
	defer x.Scope().Within(r.Name)()
	var h *autograd.Tensor
	if r.RunBlocks != nil {
		h = r.RunBlocks(append([]Layer{resnetStem{r}}, r.Blocks()...), x)
	} else {
		h = resnetStem{r}.Forward(x)
		for _, blk := range r.Blocks() {
			n := blk.Forward(h)
			h.Release()
			h = n
		}
	}
	p := autograd.AdaptiveAvgPool2d(h, 1, 1)
	h.Release()
	f := p.Flatten(1, -1) // saved by fc
	p.Release()
	out := r.FC.Forward(f)
	f.Release()
	return out
}

// Blocks returns the residual blocks of all stages, in order.
func (r *ResNet) Blocks() []Layer {
	var bs []Layer
	for _, st := range r.Stages {
		bs = append(bs, st...)
	}
	return bs
}

// Params returns the parameters and buffers in torchvision's order.
func (r *ResNet) Params() []Param {
	var ps []Param
	if r.Conv1 != nil {
		ps = append(ps, r.Conv1.Params()...)
	}
	if r.BN1 != nil {
		ps = append(ps, r.BN1.Params()...)
	}
	for _, stage := range r.Stages {
		for _, blk := range stage {
			ps = append(ps, blk.Params()...)
		}
	}
	if r.FC != nil {
		ps = append(ps, r.FC.Params()...)
	}
	return ps
}

// Train switches every BatchNorm between batch and running statistics.
func (r *ResNet) Train(on bool) {
	r.BN1.Train(on)
	for _, stage := range r.Stages {
		for _, blk := range stage {
			blk.Train(on)
		}
	}
}

// preset builds a ResNet with cfg's Block and Blocks replaced.
func preset(b *Builder, name string, cfg ResNetConfig, block string, blocks ...int) (*ResNet, error) {
	cfg.Block, cfg.Blocks = block, blocks
	return NewResNet(b, name, cfg)
}

// ResNet18 builds torchvision's resnet18 (basic blocks 2, 2, 2, 2;
// 11,689,512 parameters with the defaults) from cfg's other fields.
func ResNet18(b *Builder, name string, cfg ResNetConfig) (*ResNet, error) {
	return preset(b, name, cfg, "basic", 2, 2, 2, 2)
}

// ResNet34 builds torchvision's resnet34 (basic blocks 3, 4, 6, 3;
// 21,797,672 parameters with the defaults).
func ResNet34(b *Builder, name string, cfg ResNetConfig) (*ResNet, error) {
	return preset(b, name, cfg, "basic", 3, 4, 6, 3)
}

// ResNet50 builds torchvision's resnet50 (bottleneck blocks 3, 4, 6, 3;
// 25,557,032 parameters with the defaults).
func ResNet50(b *Builder, name string, cfg ResNetConfig) (*ResNet, error) {
	return preset(b, name, cfg, "bottleneck", 3, 4, 6, 3)
}

// ResNet101 builds torchvision's resnet101 (bottleneck blocks 3, 4, 23, 3;
// 44,549,160 parameters with the defaults).
func ResNet101(b *Builder, name string, cfg ResNetConfig) (*ResNet, error) {
	return preset(b, name, cfg, "bottleneck", 3, 4, 23, 3)
}

// ResNet152 builds torchvision's resnet152 (bottleneck blocks 3, 8, 36, 3;
// 60,192,808 parameters with the defaults).
func ResNet152(b *Builder, name string, cfg ResNetConfig) (*ResNet, error) {
	return preset(b, name, cfg, "bottleneck", 3, 8, 36, 3)
}

// SmallResNet builds a ResNet for 28×28 (MNIST) and 32×32 (CIFAR) images
// that trains on a 2-core CPU in minutes: the small stem (conv 3×3 stride
// 1 to 16 channels, BN, ReLU), one BasicBlock in each of three stages of
// widths 16, 32 and 64 (strides 1, 2, 2: 28×28 → 28, 14, 7), global average
// pooling and fc. With 10 classes and 1 input channel it has 77,754
// parameters (78,042 with 3). cfg's Block and Blocks are replaced; its
// Widths (nil: 16, 32, 64) and Stem ("": small) are filled when empty, and
// Classes 0 means 10.
func SmallResNet(b *Builder, name string, cfg ResNetConfig) (*ResNet, error) {
	if cfg.Widths == nil {
		cfg.Widths = []int{16, 32, 64}
	}
	if cfg.Stem == "" {
		cfg.Stem = "small"
	}
	if cfg.Classes == 0 {
		cfg.Classes = 10
	}
	return preset(b, name, cfg, "basic", 1, 1, 1)
}

// resnetStem is a ResNet's stem as one layer, so that checkpointing can
// cover its full-resolution activations too. Its parameters belong to the
// ResNet.
type resnetStem struct{ r *ResNet }

// Forward runs conv1, bn1, ReLU and, with the imagenet stem, the max-pool.
func (st resnetStem) Forward(x *autograd.Tensor) *autograd.Tensor {
	r := st.r
	c := r.Conv1.Forward(x)   // saved by bn1
	h := r.BN1.ForwardReLU(c) // saved by ReLU and what follows
	c.Release()
	return st.pool(h)
}

// pool applies the imagenet stem's max-pool to h and releases h; with the
// small stem it returns h.
func (st resnetStem) pool(h *autograd.Tensor) *autograd.Tensor {
	if st.r.Config.Stem != "imagenet" {
		return h
	}
	p := autograd.MaxPool2d(h, autograd.PoolOptions{Kernel: [2]int{3, 3}, Stride: [2]int{2, 2}, Padding: [2]int{1, 1}})
	h.Release()
	return p
}

// Params returns nothing: the stem's parameters are listed by the ResNet.
func (resnetStem) Params() []Param { return nil }

// Train does nothing: the ResNet sets its batch-norm's mode.
func (resnetStem) Train(bool) {}
