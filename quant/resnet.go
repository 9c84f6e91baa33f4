package quant

import (
	"fmt"
	"iter"

	"github.com/headroom-ml/headroom/autograd"
	"github.com/headroom-ml/headroom/nn"
)

// ResNet is an nn.ResNet prepared for quantization (calibration or QAT) or
// converted to int8. Every convolution comes with the batch-norm after it
// folded in and the ReLU after that fused (Stem, Block.Convs,
// Block.Downsample); FC is the classifier. In a prepared model the slots
// are float layers that borrow the nn.ResNet's tensors; in a converted one
// they are *Conv2d and *Linear with int8 weights, owned by the model.
//
// Memory of the converted model: the sum of its layers' — per
// convolution and fc, one byte per weight and 8 per output channel (scale
// and bias), 4 more with static activations. For SmallResNet on one input
// channel that is 77,072 + 1,384 + 1,384 = 79,840 bytes against the F32
// model's 313,704 (311,016 of parameters, 2,688 of batch-norm buffers):
// 25.5%. Forward leaves only the logits; the F32 activations between
// layers are released as soon as they are consumed.
type ResNet struct {
	Name   string
	Config nn.ResNetConfig
	Stem   nn.Layer // conv1 + bn1 + ReLU
	Pool   bool     // the ImageNet stem's 3×3 max pool follows
	Blocks []*Block
	FC     nn.Layer // fc
	state
}

// Block is a residual block: Convs run in order (each with its batch-norm
// folded in; every one but the last with a ReLU), Downsample projects the
// shortcut (nil for the identity), and the sum goes through a ReLU.
type Block struct {
	Name       string
	Convs      []nn.Layer
	Downsample nn.Layer
}

// state is what prepared and converted models share: the mode and the
// float model a prepared one borrows.
type state struct {
	cfg       Config
	qat       bool
	converted bool
	float     nn.Module // the borrowed float model (prepared only)
}

// Converted reports whether the model holds int8 layers.
func (s *state) Converted() bool { return s.converted }

// Forward returns the block applied to x.
func (b *Block) Forward(x *autograd.Tensor) *autograd.Tensor {
	defer x.Scope().Within(b.Name)()
	h := x
	for _, c := range b.Convs {
		n := c.Forward(h)
		if h != x {
			h.Release()
		}
		h = n
	}
	id := x
	if b.Downsample != nil {
		id = b.Downsample.Forward(x)
	}
	sum := h.Add(id)
	release(x, h, id)
	out := sum.ReLU()
	sum.Release()
	return out
}

// Params returns the convolutions' and the projection's params.
func (b *Block) Params() []nn.Param {
	var ps []nn.Param
	for _, c := range b.Convs {
		ps = append(ps, c.Params()...)
	}
	if b.Downsample != nil {
		ps = append(ps, b.Downsample.Params()...)
	}
	return ps
}

// Train sets the mode of the layers.
func (b *Block) Train(on bool) {
	for _, c := range b.layers() {
		c.Train(on)
	}
}

func (b *Block) layers() []nn.Layer {
	ls := append([]nn.Layer(nil), b.Convs...)
	if b.Downsample != nil {
		ls = append(ls, b.Downsample)
	}
	return ls
}

// Forward returns the logits (N, Classes) for images x (N, InChannels, H,
// W). A converted model must run where no graph is recorded
// (Scope.NoGrad), and panics with *autograd.Error otherwise.
func (r *ResNet) Forward(x *autograd.Tensor) *autograd.Tensor {
	if s := x.Scope(); r.converted && s != nil && s.GradEnabled() {
		fail("quant.resnet", "%s: %s", r.Name, inferenceOnly)
	}
	defer x.Scope().Within(r.Name)()
	h := r.Stem.Forward(x)
	if r.Pool {
		p := autograd.MaxPool2d(h, autograd.PoolOptions{Kernel: [2]int{3, 3}, Stride: [2]int{2, 2}, Padding: [2]int{1, 1}})
		h.Release()
		h = p
	}
	for _, b := range r.Blocks {
		n := b.Forward(h)
		h.Release()
		h = n
	}
	p := autograd.AdaptiveAvgPool2d(h, 1, 1)
	h.Release()
	f := p.Flatten(1, -1)
	p.Release()
	out := r.FC.Forward(f)
	f.Release()
	return out
}

// layers returns every quantizable layer in order.
func (r *ResNet) layers() []nn.Layer {
	ls := []nn.Layer{r.Stem}
	for _, b := range r.Blocks {
		ls = append(ls, b.layers()...)
	}
	return append(ls, r.FC)
}

// Params returns the params: a prepared model's are the float model's (so
// an optimizer trains them in QAT); a converted model's are its int8
// weights, scales and biases, all buffers.
func (r *ResNet) Params() []nn.Param {
	if r.float != nil {
		return r.float.Params()
	}
	var ps []nn.Param
	for _, l := range r.layers() {
		if l != nil {
			ps = append(ps, l.Params()...)
		}
	}
	return ps
}

// Train switches training mode: in QAT, observers record ranges only in
// training mode (batch-norm statistics stay frozen either way). It does
// nothing to a converted model.
func (r *ResNet) Train(on bool) {
	for _, l := range r.layers() {
		if l != nil {
			l.Train(on)
		}
	}
}

// PrepareResNet returns r prepared for post-training quantization with
// static activations: a model that computes exactly r in eval mode (batch-
// norm with running statistics) and records the range of every quantized
// layer's input as it runs (Calibrate). It borrows r's tensors; r must
// stay alive until Convert.
func PrepareResNet(r *nn.ResNet, cfg Config) (*ResNet, error) {
	return prepareResNet(r, cfg, false)
}

// PrepareQATResNet returns r prepared for quantization-aware training: a
// model whose forward folds each batch-norm (running statistics, frozen)
// into its convolution and fake-quantizes every quantized layer's weight
// per channel and input per tensor (FakeQuantize), so that fine-tuning
// with an optimizer over its Params — r's own parameters — learns weights
// that survive Convert. Observers record input ranges in training mode.
func PrepareQATResNet(r *nn.ResNet, cfg Config) (*ResNet, error) {
	return prepareResNet(r, cfg, true)
}

func prepareResNet(r *nn.ResNet, cfg Config, qat bool) (*ResNet, error) {
	cfg, err := cfg.resolved(qat)
	if err != nil {
		return nil, fmt.Errorf("quant: prepare %s: %w", r.Name, err)
	}
	if r.Conv1 == nil || r.BN1 == nil || r.FC == nil {
		return nil, fmt.Errorf("quant: prepare %s: the model is not fully built", r.Name)
	}
	conv := func(c *nn.Conv2d, bn *nn.BatchNorm2d, relu bool) nn.Layer {
		return &floatConv{c: c, bn: bn, relu: relu, q: newQuantizer(cfg, qat)}
	}
	q := &ResNet{Name: r.Name, Config: r.Config, Pool: r.Config.Stem == "imagenet", state: state{cfg: cfg, qat: qat, float: r}}
	q.Stem = conv(r.Conv1, r.BN1, true)
	for _, blk := range r.Blocks() {
		var convs []*nn.Conv2d
		var bns []*nn.BatchNorm2d
		var b *Block
		switch k := blk.(type) {
		case *nn.BasicBlock:
			b = &Block{Name: k.Name}
			convs, bns = []*nn.Conv2d{k.Conv1, k.Conv2}, []*nn.BatchNorm2d{k.BN1, k.BN2}
			if k.Downsample != nil {
				b.Downsample = conv(k.Downsample.Conv, k.Downsample.BN, false)
			}
		case *nn.Bottleneck:
			b = &Block{Name: k.Name}
			convs, bns = []*nn.Conv2d{k.Conv1, k.Conv2, k.Conv3}, []*nn.BatchNorm2d{k.BN1, k.BN2, k.BN3}
			if k.Downsample != nil {
				b.Downsample = conv(k.Downsample.Conv, k.Downsample.BN, false)
			}
		default:
			return nil, fmt.Errorf("quant: prepare %s: block %T: want *nn.BasicBlock or *nn.Bottleneck", r.Name, blk)
		}
		for i, c := range convs {
			b.Convs = append(b.Convs, conv(c, bns[i], i < len(convs)-1))
		}
		q.Blocks = append(q.Blocks, b)
	}
	q.FC = &floatLinear{l: r.FC, q: newQuantizer(cfg, qat)}
	return q, nil
}

// Calibrate runs the prepared model on each batch of batches (images (N,
// C, H, W)), without recording a graph, and its observers record the
// ranges of the quantized layers' inputs. The batches belong to the
// caller; Calibrate releases everything it makes. It returns the first
// error (a bad batch, memory).
func (r *ResNet) Calibrate(batches iter.Seq[*autograd.Tensor]) error {
	if r.converted {
		return fmt.Errorf("quant: calibrate %s: the model is already converted", r.Name)
	}
	return calibrate(r, quantizers(r.layers()), batches)
}

// Convert returns the int8 model of a prepared ResNet: each convolution's
// weight with its batch-norm folded in, quantized per output channel; the
// input scales the observers recorded (static activations, which need a
// calibration or QAT first) or none (dynamic). The prepared model and the
// float model are left as they were; the result owns its tensors (nn.Release
// frees them).
func (r *ResNet) Convert() (*ResNet, error) {
	out, err := r.convert(false)
	if err != nil {
		return nil, fmt.Errorf("quant: convert %s: %w", r.Name, err)
	}
	return out, nil
}

func (r *ResNet) convert(empty bool) (q *ResNet, err error) {
	if r.converted {
		return nil, fmt.Errorf("already converted")
	}
	if err := checkObserved(r.cfg, r.layers(), empty); err != nil {
		return nil, err
	}
	q = &ResNet{Name: r.Name, Config: r.Config, Pool: r.Pool, state: state{cfg: r.cfg, qat: r.qat, converted: true}}
	err = autograd.Try(func() {
		defer releaseOnPanic(q)
		q.Stem = convertLayer(r.Stem, r.cfg, empty)
		for _, b := range r.Blocks {
			nb := &Block{Name: b.Name}
			q.Blocks = append(q.Blocks, nb)
			for _, c := range b.Convs {
				nb.Convs = append(nb.Convs, convertLayer(c, r.cfg, empty))
			}
			if b.Downsample != nil {
				nb.Downsample = convertLayer(b.Downsample, r.cfg, empty)
			}
		}
		q.FC = convertLayer(r.FC, r.cfg, empty)
	})
	if err != nil {
		return nil, err
	}
	return q, nil
}
