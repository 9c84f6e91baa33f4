package nn

import "github.com/headroom-ml/headroom/autograd"

// BatchNormOptions configures BatchNorm2d. Its zero value is PyTorch's
// default: momentum 0.1, eps 1e-5.
type BatchNormOptions struct {
	// Momentum weighs the batch statistics in the running ones:
	// run = (1−Momentum)·run + Momentum·batch. 0 means 0.1.
	Momentum float64
	// Eps is added to the variance. 0 means 1e-5.
	Eps float64
}

// BatchNorm2d normalises x (N, C, H, W) per channel: PyTorch's
// nn.BatchNorm2d with affine weight and bias and running statistics. In
// training it uses the batch's statistics and updates the running ones; in
// eval (Train(false)) it uses the running ones and changes nothing.
//
// Memory, with s the dtype's size and cs the statistics' (4, or 8 for
// F64):
//   - parameters: 2·C·s bytes (weight, bias) and 2·C·s bytes of buffers
//     (running mean and variance);
//   - forward leaves N·C·H·W·s + 2·C·cs bytes of activations (y, and the
//     per-channel mean and 1/√(var+eps) it saves) and saves x, alive
//     already. Without a recorded graph only y remains.
type BatchNorm2d struct {
	Name        string
	C           int
	Momentum    float64
	Eps         float64
	Weight      *autograd.Tensor // (C), 1
	Bias        *autograd.Tensor // (C), 0
	RunningMean *autograd.Tensor // (C) buffer, 0
	RunningVar  *autograd.Tensor // (C) buffer, 1
	training    bool
}

// NewBatchNorm2d makes a BatchNorm2d over c channels named name, in
// training mode, with weight 1, bias 0, running mean 0 and running
// variance 1 (PyTorch's initial values).
func NewBatchNorm2d(b *Builder, name string, c int, o BatchNormOptions) *BatchNorm2d {
	if o.Momentum == 0 {
		o.Momentum = 0.1
	}
	if o.Eps == 0 {
		o.Eps = 1e-5
	}
	switch {
	case c <= 0:
		fail("nn.batch_norm2d", "%s: %d channels: want > 0", name, c)
	case o.Momentum < 0 || o.Momentum > 1 || o.Eps < 0:
		fail("nn.batch_norm2d", "%s: momentum %g and eps %g: want 0 ≤ momentum ≤ 1 and eps ≥ 0", name, o.Momentum, o.Eps)
	}
	n := &BatchNorm2d{Name: name, C: c, Momentum: o.Momentum, Eps: o.Eps, training: true}
	defer releaseOnPanic(n)
	n.Weight = b.Param(join(name, "weight"), c)
	n.Bias = b.Param(join(name, "bias"), c)
	n.RunningMean = b.Buffer(join(name, "running_mean"), c)
	n.RunningVar = b.Buffer(join(name, "running_var"), c)
	b.Fill(n.Weight, 1)
	b.Fill(n.RunningVar, 1)
	return n
}

// Forward normalises x (N, C, H, W) (or (N, C), or (N, C, L)).
func (n *BatchNorm2d) Forward(x *autograd.Tensor) *autograd.Tensor {
	defer x.Scope().Within(n.Name)()
	return autograd.BatchNorm2d(x, n.Weight, n.Bias, n.RunningMean, n.RunningVar, n.training, n.Momentum, n.Eps)
}

// ForwardReLU is Forward followed by ReLU, in one op and one pass, in
// training and in inference (autograd.BatchNormReLU2d): the same values
// and gradients, one activation instead of two.
func (n *BatchNorm2d) ForwardReLU(x *autograd.Tensor) *autograd.Tensor {
	defer x.Scope().Within(n.Name)()
	return autograd.BatchNormReLU2d(x, n.Weight, n.Bias, n.RunningMean, n.RunningVar, n.training, n.Momentum, n.Eps)
}

// Params returns weight and bias, then the running mean and variance as
// buffers.
func (n *BatchNorm2d) Params() []Param {
	ps := tensors(n.Weight, n.Bias)
	for _, t := range []*autograd.Tensor{n.RunningMean, n.RunningVar} {
		if t != nil {
			ps = append(ps, Param{Name: t.Name(), T: t, Buffer: true})
		}
	}
	return ps
}

// Train switches between batch statistics (on) and running ones (off).
func (n *BatchNorm2d) Train(on bool) { n.training = on }

// Training reports the mode.
func (n *BatchNorm2d) Training() bool { return n.training }

// LayerNormOptions configures LayerNorm. Its zero value is PyTorch's
// default: eps 1e-5, with a bias.
type LayerNormOptions struct {
	// Eps is added to the variance. 0 means 1e-5.
	Eps float64
	// NoBias leaves the bias out (nanoGPT's bias=False).
	NoBias bool
}

// LayerNorm normalises x (…, C) over its last dimension with a learned
// weight and bias: PyTorch's nn.LayerNorm(C).
//
// Memory, with rows = numel(x)/C, s the dtype's size and cs the
// statistics' (4, or 8 for F64):
//   - parameters: 2·C·s bytes (C·s without bias);
//   - forward leaves numel(x)·s + 2·rows·cs bytes of activations (y, and
//     the per-row mean and 1/√(var+eps) it saves) and saves x, alive
//     already. Without a recorded graph only y remains.
type LayerNorm struct {
	Name   string
	C      int
	Eps    float64
	Weight *autograd.Tensor // (C), 1
	Bias   *autograd.Tensor // (C), 0; nil with NoBias
}

// NewLayerNorm makes a LayerNorm over c features named name, with weight 1
// and bias 0.
func NewLayerNorm(b *Builder, name string, c int, o LayerNormOptions) *LayerNorm {
	if o.Eps == 0 {
		o.Eps = 1e-5
	}
	if c <= 0 || o.Eps < 0 {
		fail("nn.layer_norm", "%s: %d features, eps %g: want features > 0 and eps ≥ 0", name, c, o.Eps)
	}
	l := &LayerNorm{Name: name, C: c, Eps: o.Eps}
	defer releaseOnPanic(l)
	l.Weight = b.Param(join(name, "weight"), c)
	if !o.NoBias {
		l.Bias = b.Param(join(name, "bias"), c)
	}
	b.Fill(l.Weight, 1)
	return l
}

// Forward normalises x (…, C).
func (l *LayerNorm) Forward(x *autograd.Tensor) *autograd.Tensor {
	defer x.Scope().Within(l.Name)()
	return autograd.LayerNorm(x, l.Weight, l.Bias, l.Eps)
}

// Params returns weight and bias.
func (l *LayerNorm) Params() []Param { return tensors(l.Weight, l.Bias) }

// Train does nothing: LayerNorm behaves the same in both modes.
func (l *LayerNorm) Train(bool) {}
