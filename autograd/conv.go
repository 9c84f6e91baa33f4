package autograd

import (
	"github.com/headroom-ml/headroom/device"
	"github.com/headroom-ml/headroom/dtype"
)

// ConvOptions configures Conv2d. Its zero value is PyTorch's default:
// stride 1, padding 0, dilation 1, one group. Each pair is (H, W); a zero
// entry of Stride or Dilation means 1, and Groups 0 means 1.
type ConvOptions struct {
	// Stride is the step between neighbouring windows.
	Stride [2]int
	// Padding is the number of zeros added on both sides.
	Padding [2]int
	// Dilation is the spacing between kernel taps.
	Dilation [2]int
	// Groups splits the C input channels and K filters into that many
	// independent groups (both must divide by it); Groups = C with K a
	// multiple of C is a depthwise convolution.
	Groups int
}

// Conv2d returns the 2-D convolution (cross-correlation, as in PyTorch) of
// x (N, C, H, W) with w (K, C/G, R, S), plus b (K) when b is not nil:
// y (N, K, OH, OW) with OH = (H + 2·padH − dilH·(R−1) − 1)/strideH + 1
// (floor), OW likewise. x, w and b share one float dtype, which y has;
// F16 and BF16 are computed in F32.
//
// Memory: y is the only allocation that outlives the call. The forward
// pass borrows a workspace of device.Conv2d.ForwardWorkspace elements of
// the compute dtype (F64 for F64, else F32: the cpu kernels' packed
// filters and per-worker tiles, or the cuda kernels' im2col matrix of one
// sample and group, whichever is larger), tagged Workspace and freed
// before it returns. The bias is added into y in place by a broadcast add.
// Saves x when w needs a gradient and w when x needs one (contiguous
// copies when they are strided). Backward allocates dx, dw and db as
// needed, dx borrowing a workspace of GradInputWorkspace elements and dw
// one of GradWeightWorkspace (the chunks' copies of dw, and the F32 dw a
// 16-bit one is summed in); db is the sum of dy over N, OH and OW.
func Conv2d(x, w, b *Tensor, opt ConvOptions) *Tensor {
	o := begin("conv2d", x, w, b)
	cast, rel := o.castLow(x, w, b)
	defer rel()
	x, w, b = cast[0], cast[1], cast[2]
	dt := o.exactDType(operand{"input", x}, operand{"weight", w}, operand{"bias", b})
	p := convParams(x, w, b, opt)
	cdt := computeDType(dt)
	xc, fx := dense(x)
	defer fx()
	wc, fw := dense(w)
	defer fw()
	y := o.replayed(dt, []int{p.N, p.K, p.OH, p.OW}) // a recomputation that kept it skips the convolution
	if y == nil {
		y = o.empty(dt, []int{p.N, p.K, p.OH, p.OW})
		convForward(o, p, y, xc, wc, b, cdt)
		o.logged(y)
	}
	xs, wsh := x.shape, w.shape
	save := []*Tensor{pick(w.requiresGrad, xc), pick(x.requiresGrad, wc)}
	o.grad([]*Tensor{y}, []*Tensor{x, w, b}, save, func(c *bctx) []*Tensor {
		g, fg := denseAs(c.g[0], dt)
		defer fg()
		bo := begin("conv2d_backward", g, c.saved[0], c.saved[1])
		res := make([]*Tensor, 3)
		if c.need[0] {
			dx := bo.empty(dt, xs)
			ws := convScratch(bo, p.GradInputWorkspace(dt), cdt)
			if k := bo.k(); k != nil {
				k.Conv2dGradInput(p, dx.operand(), g.operand(), c.saved[1].operand(), optOperand(ws))
			}
			if ws != nil {
				ws.Release()
			}
			res[0] = dx
		}
		if c.need[1] {
			dw := bo.empty(dt, wsh)
			ws := convScratch(bo, p.GradWeightWorkspace(dt), cdt)
			if k := bo.k(); k != nil {
				k.Conv2dGradWeight(p, dw.operand(), g.operand(), c.saved[0].operand(), optOperand(ws))
			}
			if ws != nil {
				ws.Release()
			}
			res[1] = dw
		}
		if c.need[2] {
			res[2] = g.Sum(false, 0, 2, 3)
		}
		return res
	})
	return y
}

// convScratch allocates a convolution's workspace of n elements of cdt,
// nil when n is 0 (it needs none).
func convScratch(o *op, n int, cdt dtype.DType) *Tensor {
	if n == 0 {
		return nil
	}
	return o.scratch(cdt, []int{n})
}

// denseAs returns t as a contiguous tensor of dtype dt (t itself when it
// already is one) and the function that releases a copy.
func denseAs(t *Tensor, dt dtype.DType) (*Tensor, func()) {
	if t.dt != dt {
		c := t.Cast(dt)
		return c, c.Release
	}
	return dense(t)
}

// pair returns v with zero entries replaced by def; negative entries fail.
func pair(op, what string, v [2]int, def [2]int) [2]int {
	for i := range v {
		if v[i] < 0 {
			fail(op, "%s %v: want non-negative values", what, v)
		}
		if v[i] == 0 {
			v[i] = def[i]
		}
	}
	return v
}

// convForward computes y = conv(x, w) + b (b nil: none) with a workspace
// of the compute dtype cdt borrowed for the call.
func convForward(o *op, p device.Conv2d, y, xc, wc, b *Tensor, cdt dtype.DType) {
	ws := convScratch(o, p.ForwardWorkspace(y.dt), cdt)
	if k := o.k(); k != nil {
		k.Conv2d(p, y.operand(), xc.operand(), wc.operand(), optOperand(ws))
		if b != nil {
			bias := b.operand()
			bias.Shape, bias.Strides = y.shape, []int{0, b.strides[0], 0, 0}
			k.Binary(device.Add, y.operand(), y.operand(), bias)
		}
	}
	if ws != nil {
		ws.Release()
	}
}

// convParams checks Conv2d's operands and returns the kernel's parameters.
func convParams(x, w, b *Tensor, o ConvOptions) device.Conv2d {
	const name = "conv2d"
	if len(x.shape) != 4 || len(w.shape) != 4 {
		fail(name, "input %v and weight %v: want input (N, C, H, W) and weight (K, C/groups, R, S)", x.shape, w.shape)
	}
	g := o.Groups
	if g == 0 {
		g = 1
	}
	stride := pair(name, "stride", o.Stride, [2]int{1, 1})
	dil := pair(name, "dilation", o.Dilation, [2]int{1, 1})
	pad := pair(name, "padding", o.Padding, [2]int{0, 0})
	n, c, h, wd := x.shape[0], x.shape[1], x.shape[2], x.shape[3]
	k, r, s := w.shape[0], w.shape[2], w.shape[3]
	switch {
	case g < 0 || c%g != 0 || k%g != 0:
		fail(name, "input %v and weight %v with %d groups: want channels %d and filters %d divisible by the groups", x.shape, w.shape, g, c, k)
	case w.shape[1]*g != c:
		fail(name, "input %v and weight %v with %d groups: want weight (K, %d, R, S)", x.shape, w.shape, g, c/g)
	case r == 0 || s == 0:
		fail(name, "weight %v: want a kernel of at least 1×1", w.shape)
	}
	if b != nil && (len(b.shape) != 1 || b.shape[0] != k) {
		fail(name, "bias %v for weight %v: want (%d)", b.shape, w.shape, k)
	}
	p := device.Conv2d{
		N: n, C: c, H: h, W: wd, K: k, R: r, S: s,
		StrideH: stride[0], StrideW: stride[1], PadH: pad[0], PadW: pad[1],
		DilH: dil[0], DilW: dil[1], Groups: g,
	}
	if h+2*pad[0] < dil[0]*(r-1)+1 || wd+2*pad[1] < dil[1]*(s-1)+1 {
		fail(name, "input %v padded by %v is smaller than weight %v's kernel dilated by %v", x.shape, pad, w.shape, dil)
	}
	p.OutSize()
	return p
}
