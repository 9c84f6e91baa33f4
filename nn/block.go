package nn

import "github.com/headroom-ml/headroom/autograd"

// shortcut is a residual block's projection: a 1×1 convolution with the
// block's stride and a BatchNorm2d (torchvision's downsample.0 and .1).
type shortcut struct {
	Conv *Conv2d
	BN   *BatchNorm2d
}

// newShortcut returns the projection from in to out channels with stride,
// or nil when the shape does not change.
func newShortcut(b *Builder, name string, in, out, stride int) *shortcut {
	if stride == 1 && in == out {
		return nil
	}
	s := &shortcut{}
	defer releaseOnPanic(s)
	s.Conv = newConv(b, join(name, "0"), in, out, 1, stride, 0)
	s.BN = NewBatchNorm2d(b, join(name, "1"), out, BatchNormOptions{})
	return s
}

// forward returns the shortcut branch for x: x itself (a new handle) or its
// projection.
func (s *shortcut) forward(x *autograd.Tensor) *autograd.Tensor {
	if s == nil {
		return x
	}
	c := s.Conv.Forward(x) // saved by BN
	y := s.BN.Forward(c)
	c.Release()
	return y
}

func (s *shortcut) Params() []Param {
	if s == nil {
		return nil
	}
	var ps []Param
	if s.Conv != nil {
		ps = append(ps, s.Conv.Params()...)
	}
	if s.BN != nil {
		ps = append(ps, s.BN.Params()...)
	}
	return ps
}

func (s *shortcut) Train(on bool) {
	if s != nil {
		s.BN.Train(on)
	}
}

// newConv makes a bias-free square convolution initialised as torchvision's
// ResNet does (kaiming_normal_, fan_out, ReLU gain).
func newConv(b *Builder, name string, in, out, k, stride, pad int) *Conv2d {
	c := NewConv2d(b, name, in, out, [2]int{k, k}, autograd.ConvOptions{Stride: [2]int{stride, stride}, Padding: [2]int{pad, pad}}, false)
	c.kaimingNormalFanOut(b)
	return c
}

// BasicBlock is ResNet-18/34's residual block: conv3×3 (stride) → BN →
// ReLU → conv3×3 → BN, plus the shortcut (x, or conv1×1 (stride) → BN when
// the shape changes), then ReLU. Expansion 1: Out = Width. Names follow
// torchvision: conv1, bn1, conv2, bn2, downsample.0, downsample.1.
//
// Memory, for x (N, In, H, W) giving (N, Width, H', W') with H' = ⌈H/stride⌉,
// A = N·Width·H'·W'·s (s the dtype's size) and cs the BatchNorm statistics'
// size (4, or 8 for F64):
//   - parameters: (9·In·Width + 9·Width² + 4·Width)·s bytes, plus buffers
//     4·Width·s; the projection adds In·Width·s + 2·Width·s (and 2·Width·s
//     of buffers);
//   - forward leaves 4·A + 4·Width·cs bytes of activations (conv1's output
//     saved by bn1, ReLU's output saved by conv2, conv2's output saved by
//     bn2, the result, and two BatchNorms' statistics), with the projection
//     5·A + 6·Width·cs (its convolution's output, saved by its BatchNorm).
//     BatchNorm outputs and the sum are released once consumed. It saves
//     x, alive already.
type BasicBlock struct {
	Name         string
	In, Width    int
	Stride       int
	Conv1, Conv2 *Conv2d
	BN1, BN2     *BatchNorm2d
	Downsample   *shortcut // nil for the identity
}

// NewBasicBlock makes a BasicBlock from in to width channels with stride
// (1 or more) on its first convolution, in training mode.
func NewBasicBlock(b *Builder, name string, in, width, stride int) *BasicBlock {
	if in <= 0 || width <= 0 || stride <= 0 {
		fail("nn.basic_block", "%s: in %d, width %d, stride %d: want all > 0", name, in, width, stride)
	}
	k := &BasicBlock{Name: name, In: in, Width: width, Stride: stride}
	defer releaseOnPanic(k)
	k.Conv1 = newConv(b, join(name, "conv1"), in, width, 3, stride, 1)
	k.BN1 = NewBatchNorm2d(b, join(name, "bn1"), width, BatchNormOptions{})
	k.Conv2 = newConv(b, join(name, "conv2"), width, width, 3, 1, 1)
	k.BN2 = NewBatchNorm2d(b, join(name, "bn2"), width, BatchNormOptions{})
	k.Downsample = newShortcut(b, join(name, "downsample"), in, width, stride)
	return k
}

// Forward returns the block applied to x (N, In, H, W).
func (k *BasicBlock) Forward(x *autograd.Tensor) *autograd.Tensor {
	defer x.Scope().Within(k.Name)()
	h := k.Conv1.Forward(x)   // saved by bn1
	r := k.BN1.ForwardReLU(h) // saved by ReLU and conv2
	h.Release()
	h = k.Conv2.Forward(r) // saved by bn2
	r.Release()
	n := k.BN2.Forward(h)
	h.Release()
	return residual(x, n, k.Downsample)
}

// residual returns relu(main + shortcut(x)), releasing main and the
// shortcut's intermediates (never x).
func residual(x, main *autograd.Tensor, sc *shortcut) *autograd.Tensor {
	id := sc.forward(x)
	sum := main.Add(id)
	main.Release()
	if id != x {
		id.Release()
	}
	out := sum.ReLU()
	sum.Release()
	return out
}

// Params returns the block's parameters and buffers in torchvision's order.
func (k *BasicBlock) Params() []Param {
	var ps []Param
	if k.Conv1 != nil {
		ps = append(ps, k.Conv1.Params()...)
	}
	if k.BN1 != nil {
		ps = append(ps, k.BN1.Params()...)
	}
	if k.Conv2 != nil {
		ps = append(ps, k.Conv2.Params()...)
	}
	if k.BN2 != nil {
		ps = append(ps, k.BN2.Params()...)
	}
	return append(ps, k.Downsample.Params()...)
}

// Train switches the BatchNorms.
func (k *BasicBlock) Train(on bool) {
	k.BN1.Train(on)
	k.BN2.Train(on)
	k.Downsample.Train(on)
}

// Bottleneck is ResNet-50/101/152's residual block (torchvision's v1.5,
// stride on the 3×3): conv1×1 → BN → ReLU → conv3×3 (stride) → BN → ReLU →
// conv1×1 to 4·Width → BN, plus the shortcut (x, or conv1×1 (stride) → BN
// when the shape changes), then ReLU. Expansion 4: Out = 4·Width. Names
// follow torchvision: conv1..3, bn1..3, downsample.0, downsample.1.
//
// Memory, for x (N, In, H, W) with H' = ⌈H/stride⌉, A1 = N·Width·H·W·s,
// A2 = N·Width·H'·W'·s, A3 = 4·N·Width·H'·W'·s (s the dtype's size) and cs
// the BatchNorm statistics' size (4, or 8 for F64):
//   - parameters: (In·Width + 9·Width² + 4·Width² + 12·Width)·s bytes, plus
//     buffers 12·Width·s; the projection adds 4·In·Width·s + 8·Width·s
//     (and 8·Width·s of buffers);
//   - forward leaves 2·A1 + 2·A2 + 2·A3 + 12·Width·cs bytes of activations
//     (each convolution's output, saved by its BatchNorm; the two ReLUs'
//     outputs, saved by them and the next convolution; the result; three
//     BatchNorms' statistics), with the projection A3 + 8·Width·cs more.
//     It saves x, alive already.
type Bottleneck struct {
	Name                string
	In, Width, Stride   int
	Conv1, Conv2, Conv3 *Conv2d
	BN1, BN2, BN3       *BatchNorm2d
	Downsample          *shortcut // nil for the identity
}

// NewBottleneck makes a Bottleneck from in to 4·width channels with stride
// on its 3×3 convolution, in training mode.
func NewBottleneck(b *Builder, name string, in, width, stride int) *Bottleneck {
	if in <= 0 || width <= 0 || stride <= 0 {
		fail("nn.bottleneck", "%s: in %d, width %d, stride %d: want all > 0", name, in, width, stride)
	}
	k := &Bottleneck{Name: name, In: in, Width: width, Stride: stride}
	defer releaseOnPanic(k)
	k.Conv1 = newConv(b, join(name, "conv1"), in, width, 1, 1, 0)
	k.BN1 = NewBatchNorm2d(b, join(name, "bn1"), width, BatchNormOptions{})
	k.Conv2 = newConv(b, join(name, "conv2"), width, width, 3, stride, 1)
	k.BN2 = NewBatchNorm2d(b, join(name, "bn2"), width, BatchNormOptions{})
	k.Conv3 = newConv(b, join(name, "conv3"), width, 4*width, 1, 1, 0)
	k.BN3 = NewBatchNorm2d(b, join(name, "bn3"), 4*width, BatchNormOptions{})
	k.Downsample = newShortcut(b, join(name, "downsample"), in, 4*width, stride)
	return k
}

// Forward returns the block applied to x (N, In, H, W).
func (k *Bottleneck) Forward(x *autograd.Tensor) *autograd.Tensor {
	defer x.Scope().Within(k.Name)()
	h := k.Conv1.Forward(x)   // saved by bn1
	r := k.BN1.ForwardReLU(h) // saved by ReLU and conv2
	h.Release()
	h = k.Conv2.Forward(r) // saved by bn2
	r.Release()
	r = k.BN2.ForwardReLU(h) // saved by ReLU and conv3
	h.Release()
	h = k.Conv3.Forward(r) // saved by bn3
	r.Release()
	n := k.BN3.Forward(h)
	h.Release()
	return residual(x, n, k.Downsample)
}

// Params returns the block's parameters and buffers in torchvision's order.
func (k *Bottleneck) Params() []Param {
	var ps []Param
	for i, c := range []*Conv2d{k.Conv1, k.Conv2, k.Conv3} {
		if c != nil {
			ps = append(ps, c.Params()...)
		}
		if n := []*BatchNorm2d{k.BN1, k.BN2, k.BN3}[i]; n != nil {
			ps = append(ps, n.Params()...)
		}
	}
	return append(ps, k.Downsample.Params()...)
}

// Train switches the BatchNorms.
func (k *Bottleneck) Train(on bool) {
	for _, n := range []*BatchNorm2d{k.BN1, k.BN2, k.BN3} {
		n.Train(on)
	}
	k.Downsample.Train(on)
}
