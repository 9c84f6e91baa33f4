package quant

import (
	"github.com/headroom-ml/headroom/autograd"
	"github.com/headroom-ml/headroom/device"
	"github.com/headroom-ml/headroom/dtype"
	"github.com/headroom-ml/headroom/nn"
)

// Conv2d is a 2-D convolution of x (N, In, H, W) computed on the INT8
// GEMM, with the options of nn.Conv2d: the weight (Out, In/Groups, KH, KW)
// is int8 with one F32 scale per output channel, x is quantized per tensor
// (static InputScale, or max|x|/127 of each call when nil), and the exact
// int32 sums are dequantized into F32 with the bias added — and the ReLU
// applied when ReLU is set (fused: a convolution followed by batch-norm
// and ReLU in the float model becomes one Conv2d here). Inference only.
//
// Memory: parameters Out·In/Groups·KH·KW bytes + 4·Out (scales) + 4·Out
// (bias) + 4 (InputScale, static only). Forward allocates y (N, Out, OH,
// OW) F32 and borrows, freed before it returns: N·In·H·W bytes (the
// quantized x), an im2col matrix of In/Groups·KH·KW·c·OH·OW bytes and an
// int32 accumulator of 4·Out/Groups·c·OH·OW bytes, where c =
// device.Conv2d.I8Chunk() samples (about 4096 output positions), plus 4
// bytes for a dynamic scale and an F32 contiguous copy of x when x is
// strided or not F32.
type Conv2d struct {
	Name        string
	In, Out     int
	Kernel      [2]int
	Opt         autograd.ConvOptions
	ReLU        bool
	Weight      *autograd.Tensor // (Out, In/Groups, KH, KW) I8
	WeightScale *autograd.Tensor // (Out) F32
	Bias        *autograd.Tensor // (Out) F32, nil without bias
	InputScale  *autograd.Tensor // (1) F32; nil: dynamic
}

func newConv2d(dev *device.Device, name string, in, out int, kernel [2]int, opt autograd.ConvOptions, relu, bias, static bool) *Conv2d {
	c := &Conv2d{Name: name, In: in, Out: out, Kernel: kernel, Opt: opt, ReLU: relu}
	defer releaseOnPanic(c)
	g := max(opt.Groups, 1)
	c.Weight = param(dev, dtype.I8, join(name, "weight"), out, in/g, kernel[0], kernel[1])
	c.WeightScale = param(dev, dtype.F32, join(name, "weight_scale"), out)
	if bias {
		c.Bias = param(dev, dtype.F32, join(name, "bias"), out)
	}
	if static {
		c.InputScale = param(dev, dtype.F32, join(name, "input_scale"), 1)
	}
	return c
}

// params returns the kernel's parameters for input shape x, checking them.
func (c *Conv2d) params(x []int) device.Conv2d {
	const op = "quant.conv2d"
	if len(x) != 4 || x[1] != c.In {
		fail(op, "%s: input %v: want (N, %d, H, W)", c.Name, x, c.In)
	}
	one := func(v int) int { return max(v, 1) }
	p := device.Conv2d{
		N: x[0], C: x[1], H: x[2], W: x[3], K: c.Out, R: c.Kernel[0], S: c.Kernel[1],
		StrideH: one(c.Opt.Stride[0]), StrideW: one(c.Opt.Stride[1]), PadH: c.Opt.Padding[0], PadW: c.Opt.Padding[1],
		DilH: one(c.Opt.Dilation[0]), DilW: one(c.Opt.Dilation[1]), Groups: one(c.Opt.Groups),
	}
	if p.H+2*p.PadH < p.DilH*(p.R-1)+1 || p.W+2*p.PadW < p.DilW*(p.S-1)+1 {
		fail(op, "%s: input %v padded by %v is smaller than the %v kernel dilated by %v", c.Name, x, c.Opt.Padding, c.Kernel, c.Opt.Dilation)
	}
	p.OutSize()
	return p
}

// Forward returns the convolution of x (N, In, H, W), computed in int8.
func (c *Conv2d) Forward(x *autograd.Tensor) *autograd.Tensor {
	const op = "quant.conv2d"
	defer x.Scope().Within(c.Name)()
	p := c.params(x.Shape())
	xc, rel := inferenceInput(op, c.Name, x, c.Weight)
	defer rel()
	w := newWork(x.Device(), x.Scope(), op)
	defer w.free()
	y := output(x.Scope(), x.Device(), dtype.F32, op, p.N, p.K, p.OH, p.OW)
	sc := inputScale(w, xc, c.InputScale)
	xq := quantizeInput(w, xc, sc)
	cw, aw := p.I8Workspace()
	col := blockOperand(w.alloc(dtype.I8, cw), dtype.I8, cw)
	acc := blockOperand(w.alloc(dtype.I32, aw), dtype.I32, aw)
	if k := x.Device().Kernels(); k != nil {
		k.Conv2dI8(p, operand(y), xq, operand(c.Weight), sc, operand(c.WeightScale), operand(c.Bias), col, acc, c.ReLU)
	}
	return y
}

// Params returns the weight, its scales, the bias and the input scale, as
// buffers.
func (c *Conv2d) Params() []nn.Param {
	return buffers(c.Weight, c.WeightScale, c.Bias, c.InputScale)
}

// Train does nothing: the layer behaves the same in both modes.
func (c *Conv2d) Train(bool) {}

// floatConv is a convolution of a float model, with the batch-norm that
// follows it (nil for none) and the ReLU after that, prepared for
// quantization. Calibrating, it observes its input and computes the float
// layers exactly (batch-norm with its running statistics); in QAT it folds
// the batch-norm into the weight and bias (w·γ/√(var+eps), β + (b −
// mean)·γ/√(var+eps), the statistics frozen), fake-quantizes the folded
// weight per channel and the input per tensor, and convolves — what the
// converted Conv2d computes, in floating point. It borrows the layers.
type floatConv struct {
	c    *nn.Conv2d
	bn   *nn.BatchNorm2d
	relu bool
	q    *quantizer
}

func (f *floatConv) Forward(x *autograd.Tensor) *autograd.Tensor {
	defer x.Scope().Within(f.c.Name)()
	var y *autograd.Tensor
	if !f.q.qat {
		f.q.observe(x)
		xc := asDType(x, f.c.Weight.DType())
		y = autograd.Conv2d(xc, f.c.Weight, f.c.Bias, f.c.Opt)
		release(x, xc)
		if f.bn != nil {
			n := f.bn
			b := autograd.BatchNorm2d(y, n.Weight, n.Bias, n.RunningMean, n.RunningVar, false, n.Momentum, n.Eps)
			y.Release()
			y = b
		}
	} else {
		s := qatScope("quant.qat_conv2d", f.c.Name, x)
		xf := f.q.fakeInput(x)
		wf, bf := fold(s, f.c, f.bn)
		wf, bf = computable(wf), computable(bf)
		ws := Scales(wf, f.c.Out)
		wq := FakeQuantize(wf, ws, f.c.Out)
		y = autograd.Conv2d(xf, wq, bf, f.c.Opt)
		release(x, xf, wf, bf, ws, wq)
	}
	if f.relu {
		r := y.ReLU()
		y.Release()
		y = r
	}
	return y
}

func (f *floatConv) Params() []nn.Param {
	ps := f.c.Params()
	if f.bn != nil {
		ps = append(ps, f.bn.Params()...)
	}
	return ps
}

func (f *floatConv) Train(on bool) { f.q.training = on }

// fold returns the convolution's weight and bias with the batch-norm
// folded in (eval statistics), as tensors of s recorded in its graph: the
// weight's and the batch-norm's parameters get gradients through them.
// Without a batch-norm they are the layer's own (new handles; the bias
// may be nil).
func fold(s *autograd.Scope, c *nn.Conv2d, bn *nn.BatchNorm2d) (w, b *autograd.Tensor) {
	w = s.Use(c.Weight)
	if c.Bias != nil {
		b = s.Use(c.Bias)
	}
	if bn == nil {
		return w, b
	}
	var mean, inv *autograd.Tensor
	s.NoGrad(func() {
		mean = s.Use(bn.RunningMean)
		v := s.Use(bn.RunningVar)
		ve := v.AddScalar(bn.Eps)
		inv = ve.Rsqrt()
		release(nil, v, ve)
	})
	g := s.Use(bn.Weight)
	gi := g.Mul(inv) // γ/√(var+eps), (K)
	g4 := gi.Reshape(c.Out, 1, 1, 1)
	wf := w.Mul(g4)
	var d *autograd.Tensor // b − mean, or −mean
	if b != nil {
		d = b.Sub(mean)
	} else {
		d = mean.Neg()
	}
	dg := d.Mul(gi)
	beta := s.Use(bn.Bias)
	bf := beta.Add(dg)
	release(nil, w, b, mean, inv, g, gi, g4, d, dg, beta)
	return wf, bf
}

// convert makes the int8 layer: the folded weight quantized per channel,
// the folded bias, the observed input scale when static; values are left
// zero when empty.
func (f *floatConv) convert(cfg Config, empty bool) *Conv2d {
	c := f.c
	q := newConv2d(c.Weight.Device(), c.Name, c.In, c.Out, c.Kernel, c.Opt, f.relu, c.Bias != nil || f.bn != nil, cfg.Activations == Static)
	if empty {
		return q
	}
	defer releaseOnPanic(q)
	s := autograd.NewScope()
	defer s.Release()
	s.NoGrad(func() {
		w, b := fold(s, c, f.bn)
		quantizeWeight(w, c.Out, q.Weight, q.WeightScale)
		if b != nil {
			q.Bias.CopyFrom(b)
		}
	})
	if q.InputScale != nil {
		q.InputScale.SetFloat32s([]float32{f.q.obs.Scale()})
	}
	return q
}
