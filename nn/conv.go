package nn

import (
	"math"

	"github.com/headroom-ml/headroom/autograd"
)

// Conv2d is the 2-D convolution of x (N, In, H, W) into y (N, Out, OH, OW):
// PyTorch's nn.Conv2d, with stride, padding, dilation and groups from
// autograd.ConvOptions (OH = (H + 2·padH − dilH·(KH−1) − 1)/strideH + 1,
// OW likewise).
//
// Memory, with s the dtype's size:
//   - parameters: (Out·In/Groups·KH·KW + Out)·s bytes (no Out without bias);
//   - forward leaves N·Out·OH·OW·s bytes of activations (y; the bias is
//     added into y in place) and saves x, which is alive already (a
//     contiguous copy of it, N·In·H·W·s bytes more, when x is strided). Its
//     im2col workspace, In/Groups·KH·KW·OH·OW elements of F32 (F64 for F64),
//     none for a 1×1 stride-1 unpadded convolution, is freed before it
//     returns.
type Conv2d struct {
	Name    string
	In, Out int
	Kernel  [2]int
	Opt     autograd.ConvOptions
	Weight  *autograd.Tensor // (Out, In/Groups, KH, KW)
	Bias    *autograd.Tensor // (Out), nil without bias
}

// NewConv2d makes a Conv2d layer named name, initialised like PyTorch's:
// kaiming_uniform(a=√5), that is U(±1/√fanIn) for the weight and the bias,
// fanIn = In/Groups·KH·KW.
func NewConv2d(b *Builder, name string, in, out int, kernel [2]int, opt autograd.ConvOptions, bias bool) *Conv2d {
	g := max(opt.Groups, 1)
	switch {
	case in <= 0 || out <= 0 || kernel[0] <= 0 || kernel[1] <= 0:
		fail("nn.conv2d", "%s: in %d, out %d, kernel %v: want all > 0", name, in, out, kernel)
	case opt.Groups < 0 || in%g != 0 || out%g != 0:
		fail("nn.conv2d", "%s: in %d and out %d channels with %d groups: want both divisible by the groups", name, in, out, opt.Groups)
	}
	c := &Conv2d{Name: name, In: in, Out: out, Kernel: kernel, Opt: opt}
	defer releaseOnPanic(c)
	fanIn := in / g * kernel[0] * kernel[1]
	c.Weight = b.Param(join(name, "weight"), out, in/g, kernel[0], kernel[1])
	if bias {
		c.Bias = b.Param(join(name, "bias"), out)
	}
	b.KaimingUniform(c.Weight, fanIn)
	if c.Bias != nil {
		b.KaimingUniform(c.Bias, fanIn)
	}
	return c
}

// kaimingNormalFanOut re-initialises the weight as torchvision's ResNet
// does: N(0, 2/fanOut) with fanOut = Out/Groups·KH·KW (kaiming_normal_,
// mode fan_out, ReLU gain).
func (c *Conv2d) kaimingNormalFanOut(b *Builder) {
	fanOut := c.Out / max(c.Opt.Groups, 1) * c.Kernel[0] * c.Kernel[1]
	b.Normal(c.Weight, 0, math.Sqrt(2/float64(fanOut)))
}

// Forward returns the convolution of x (N, In, H, W).
func (c *Conv2d) Forward(x *autograd.Tensor) *autograd.Tensor {
	defer x.Scope().Within(c.Name)()
	return autograd.Conv2d(x, c.Weight, c.Bias, c.Opt)
}

// Params returns weight and bias.
func (c *Conv2d) Params() []Param { return tensors(c.Weight, c.Bias) }

// Train does nothing: Conv2d behaves the same in both modes.
func (c *Conv2d) Train(bool) {}
