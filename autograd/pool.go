package autograd

import "github.com/headroom-ml/headroom/device"

// PoolOptions configures MaxPool2d and AvgPool2d. Each pair is (H, W).
// Kernel is required; the zero value of every other field is PyTorch's
// default: a zero Stride entry means the kernel's size, a zero Dilation
// entry means 1, Padding is 0 and averages count padded zeros. Output
// sizes are rounded down (PyTorch's ceil_mode=False, the only mode), and
// padding may be at most half the kernel, as PyTorch requires.
type PoolOptions struct {
	// Kernel is the window size.
	Kernel [2]int
	// Stride is the step between neighbouring windows.
	Stride [2]int
	// Padding is added on both sides: −∞ for max pooling, zeros for
	// average pooling.
	Padding [2]int
	// Dilation is the spacing between window taps.
	Dilation [2]int
	// ExcludePad leaves padding out of AvgPool2d's divisor (PyTorch's
	// count_include_pad=False); the zero value counts it, as PyTorch does
	// by default.
	ExcludePad bool
}

// MaxPool2d returns the maximum of each window of x (N, C, H, W):
// y (N, C, OH, OW) with OH = (H + 2·padH − dilH·(KH−1) − 1)/strideH + 1
// (floor), OW likewise. The gradient goes to the first maximum of each
// window (row-major order; NaN counts as the largest value).
//
// Memory: y is its only allocation. Saves x (a contiguous copy when x is
// strided) and no indices: backward recomputes each window's first
// maximum from x, which spares the 8 bytes per output element (N·C·OH·OW
// int64s) that PyTorch keeps for them.
func MaxPool2d(x *Tensor, opt PoolOptions) *Tensor {
	o := begin("max_pool2d", x)
	p := poolParams("max_pool2d", x, opt)
	dt := x.dt
	y := o.empty(dt, []int{p.N, p.C, p.OH, p.OW})
	xc, fx := dense(x)
	defer fx()
	if k := o.k(); k != nil {
		k.MaxPool2d(p, y.operand(), xc.operand())
	}
	xs := x.shape
	o.grad([]*Tensor{y}, []*Tensor{x}, []*Tensor{xc}, func(c *bctx) []*Tensor {
		g, fg := denseAs(c.g[0], dt)
		defer fg()
		bo := begin("max_pool2d_backward", g, c.saved[0])
		dx := bo.empty(dt, xs)
		if k := bo.k(); k != nil {
			k.MaxPool2dGrad(p, dx.operand(), g.operand(), c.saved[0].operand())
		}
		return []*Tensor{dx}
	})
	return y
}

// AvgPool2d returns the mean of each window of x (N, C, H, W): y (N, C,
// OH, OW) sized as for MaxPool2d. The divisor is KH·KW, or with ExcludePad
// the number of the window's elements inside the input. Dilation, which
// PyTorch's AvgPool2d lacks, spaces the taps as for MaxPool2d.
//
// Memory: y is its only allocation. Saves nothing.
func AvgPool2d(x *Tensor, opt PoolOptions) *Tensor {
	o := begin("avg_pool2d", x)
	p := poolParams("avg_pool2d", x, opt)
	p.CountPad = !opt.ExcludePad
	dt := x.dt
	y := o.empty(dt, []int{p.N, p.C, p.OH, p.OW})
	xc, fx := dense(x)
	defer fx()
	if k := o.k(); k != nil {
		k.AvgPool2d(p, y.operand(), xc.operand())
	}
	xs := x.shape
	o.grad([]*Tensor{y}, []*Tensor{x}, nil, func(c *bctx) []*Tensor {
		g, fg := denseAs(c.g[0], dt)
		defer fg()
		bo := begin("avg_pool2d_backward", g)
		dx := bo.empty(dt, xs)
		if k := bo.k(); k != nil {
			k.AvgPool2dGrad(p, dx.operand(), g.operand())
		}
		return []*Tensor{dx}
	})
	return y
}

// AdaptiveAvgPool2d averages x (N, C, H, W) into y (N, C, oh, ow) with
// PyTorch's windows: output row i covers input rows floor(i·H/oh) up to
// ceil((i+1)·H/oh), columns likewise. oh = ow = 1 is global average
// pooling.
//
// Memory: y is its only allocation. Saves nothing.
func AdaptiveAvgPool2d(x *Tensor, oh, ow int) *Tensor {
	const name = "adaptive_avg_pool2d"
	o := begin(name, x)
	if len(x.shape) != 4 || !x.dt.IsFloat() {
		fail(name, "input %v %s: want (N, C, H, W) of a float dtype", x.shape, x.dt)
	}
	n, c, h, w := x.shape[0], x.shape[1], x.shape[2], x.shape[3]
	if oh < 1 || ow < 1 || h < 1 || w < 1 {
		fail(name, "input %v to output %d×%d: want non-empty H, W and output sizes", x.shape, oh, ow)
	}
	dt := x.dt
	y := o.empty(dt, []int{n, c, oh, ow})
	xc, fx := dense(x)
	defer fx()
	if k := o.k(); k != nil {
		k.AdaptiveAvgPool2d(y.operand(), xc.operand(), n, c, h, w, oh, ow)
	}
	xs := x.shape
	o.grad([]*Tensor{y}, []*Tensor{x}, nil, func(cx *bctx) []*Tensor {
		g, fg := denseAs(cx.g[0], dt)
		defer fg()
		bo := begin(name+"_backward", g)
		dx := bo.empty(dt, xs)
		if k := bo.k(); k != nil {
			k.AdaptiveAvgPool2dGrad(dx.operand(), g.operand(), n, c, h, w, oh, ow)
		}
		return []*Tensor{dx}
	})
	return y
}

// poolParams checks a pooling op's input and options and returns the
// kernel's parameters.
func poolParams(name string, x *Tensor, o PoolOptions) device.Pool2d {
	if len(x.shape) != 4 || !x.dt.IsFloat() {
		fail(name, "input %v %s: want (N, C, H, W) of a float dtype", x.shape, x.dt)
	}
	if o.Kernel[0] < 1 || o.Kernel[1] < 1 {
		fail(name, "kernel %v for input %v: want positive sizes", o.Kernel, x.shape)
	}
	stride := pair(name, "stride", o.Stride, o.Kernel)
	dil := pair(name, "dilation", o.Dilation, [2]int{1, 1})
	pad := pair(name, "padding", o.Padding, [2]int{0, 0})
	if pad[0] > o.Kernel[0]/2 || pad[1] > o.Kernel[1]/2 {
		fail(name, "padding %v for kernel %v: want at most half the kernel", pad, o.Kernel)
	}
	p := device.Pool2d{
		N: x.shape[0], C: x.shape[1], H: x.shape[2], W: x.shape[3],
		KH: o.Kernel[0], KW: o.Kernel[1], SH: stride[0], SW: stride[1],
		PH: pad[0], PW: pad[1], DH: dil[0], DW: dil[1],
	}
	if p.H+2*p.PH < p.DH*(p.KH-1)+1 || p.W+2*p.PW < p.DW*(p.KW-1)+1 {
		fail(name, "input %v padded by %v is smaller than kernel %v dilated by %v", x.shape, pad, o.Kernel, dil)
	}
	p.OutSize()
	return p
}
