package cuda

import "github.com/headroom-ml/headroom/device"

// The pooling kernels (kernels/pool.cu) take contiguous (N, C, H, W)
// operands and follow the cpu's arithmetic: forward one thread per output
// element, backward one thread per dx element that gathers, in the cpu's
// order, the windows covering it (no atomics), so results match the cpu
// bit for bit.

// poolCheck validates the operands of a pooling call: one float dtype,
// contiguous, x-side operands of N·C·H·W elements and y-side ones of
// N·C·OH·OW, a window of positive size, stride and dilation.
func (k *kern) poolCheck(op string, p device.Pool2d, in, out []device.Operand) (string, bool) {
	dt := k.sameFloat(op, append(append([]device.Operand{}, in...), out...)...)
	for _, v := range [...]struct {
		name string
		val  int
	}{{"N", p.N}, {"C", p.C}, {"H", p.H}, {"W", p.W}, {"OH", p.OH}, {"OW", p.OW}, {"PH", p.PH}, {"PW", p.PW}} {
		if v.val < 0 {
			k.bad(op, "%s = %d: want ≥ 0", v.name, v.val)
		}
	}
	if p.KH <= 0 || p.KW <= 0 || p.SH <= 0 || p.SW <= 0 || p.DH <= 0 || p.DW <= 0 {
		k.bad(op, "kernel %d×%d, stride %d×%d, dilation %d×%d: want all > 0", p.KH, p.KW, p.SH, p.SW, p.DH, p.DW)
	}
	nx, ny := p.N*p.C*p.H*p.W, p.N*p.C*p.OH*p.OW
	for _, o := range in {
		k.contiguous(op, o)
		if o.Len() != nx {
			k.bad(op, "operand of shape %v (%d elements): want N·C·H·W = %d", o.Shape, o.Len(), nx)
		}
	}
	for _, o := range out {
		k.contiguous(op, o)
		if o.Len() != ny {
			k.bad(op, "operand of shape %v (%d elements): want N·C·OH·OW = %d", o.Shape, o.Len(), ny)
		}
	}
	return Suffix(dt), nx > 0
}

// poolArgs are the trailing arguments of the pool_* kernels.
func poolArgs(p device.Pool2d) []Arg {
	cp := 0
	if p.CountPad {
		cp = 1
	}
	return []Arg{I64(int64(p.N * p.C)), I64(int64(p.H)), I64(int64(p.W)), I64(int64(p.KH)), I64(int64(p.KW)),
		I64(int64(p.SH)), I64(int64(p.SW)), I64(int64(p.PH)), I64(int64(p.PW)), I64(int64(p.DH)), I64(int64(p.DW)),
		I64(int64(p.OH)), I64(int64(p.OW)), Int(cp)}
}

// MaxPool2d runs pool_max_T: a window wholly in the padding gives −Inf.
func (k *kern) MaxPool2d(p device.Pool2d, y, x device.Operand) {
	suf, _ := k.poolCheck("MaxPool2d", p, []device.Operand{x}, []device.Operand{y})
	if n := y.Len(); n > 0 {
		k.launch("pool_max_"+suf, Linear(n), append([]Arg{k.Ptr(y), k.Ptr(x)}, poolArgs(p)...)...)
	}
}

// MaxPool2dGrad runs pool_max_grad_T: dx is overwritten with, at each
// position, the sum of the dy of the windows whose first maximum
// (recomputed from x) lies there.
func (k *kern) MaxPool2dGrad(p device.Pool2d, dx, dy, x device.Operand) {
	if suf, ok := k.poolCheck("MaxPool2dGrad", p, []device.Operand{dx, x}, []device.Operand{dy}); ok {
		k.launch("pool_max_grad_"+suf, Linear(dx.Len()), append([]Arg{k.Ptr(dx), k.Ptr(dy), k.Ptr(x)}, poolArgs(p)...)...)
	}
}

// AvgPool2d runs pool_avg_T (p.CountPad: the divisor is KH·KW).
func (k *kern) AvgPool2d(p device.Pool2d, y, x device.Operand) {
	suf, _ := k.poolCheck("AvgPool2d", p, []device.Operand{x}, []device.Operand{y})
	if n := y.Len(); n > 0 {
		k.launch("pool_avg_"+suf, Linear(n), append([]Arg{k.Ptr(y), k.Ptr(x)}, poolArgs(p)...)...)
	}
}

// AvgPool2dGrad runs pool_avg_grad_T: dx is overwritten.
func (k *kern) AvgPool2dGrad(p device.Pool2d, dx, dy device.Operand) {
	if suf, ok := k.poolCheck("AvgPool2dGrad", p, []device.Operand{dx}, []device.Operand{dy}); ok {
		k.launch("pool_avg_grad_"+suf, Linear(dx.Len()), append([]Arg{k.Ptr(dx), k.Ptr(dy)}, poolArgs(p)...)...)
	}
}

// adaptiveCheck validates an adaptive pooling call and returns the dtype
// suffix.
func (k *kern) adaptiveCheck(op string, xs, ys device.Operand, n, c, h, w, oh, ow int) string {
	dt := k.sameFloat(op, xs, ys)
	if n < 0 || c < 0 || h < 0 || w < 0 || oh < 0 || ow < 0 {
		k.bad(op, "sizes %d, %d, %d×%d → %d×%d: want ≥ 0", n, c, h, w, oh, ow)
	}
	k.contiguous(op, xs)
	k.contiguous(op, ys)
	if xs.Len() != n*c*h*w {
		k.bad(op, "input of shape %v (%d elements): want N·C·H·W = %d", xs.Shape, xs.Len(), n*c*h*w)
	}
	if ys.Len() != n*c*oh*ow {
		k.bad(op, "output of shape %v (%d elements): want N·C·OH·OW = %d", ys.Shape, ys.Len(), n*c*oh*ow)
	}
	return Suffix(dt)
}

// AdaptiveAvgPool2d runs pool_adaptive_avg_T.
func (k *kern) AdaptiveAvgPool2d(y, x device.Operand, n, c, h, w, oh, ow int) {
	suf := k.adaptiveCheck("AdaptiveAvgPool2d", x, y, n, c, h, w, oh, ow)
	if m := n * c * oh * ow; m > 0 {
		k.launch("pool_adaptive_avg_"+suf, Linear(m), k.Ptr(y), k.Ptr(x), I64(int64(n*c)), I64(int64(h)), I64(int64(w)),
			I64(int64(oh)), I64(int64(ow)))
	}
}

// AdaptiveAvgPool2dGrad runs pool_adaptive_avg_grad_T: dx is overwritten
// (zero where no window covers it, which needs OH or OW to be 0).
func (k *kern) AdaptiveAvgPool2dGrad(dx, dy device.Operand, n, c, h, w, oh, ow int) {
	suf := k.adaptiveCheck("AdaptiveAvgPool2dGrad", dx, dy, n, c, h, w, oh, ow)
	if m := n * c * h * w; m > 0 {
		k.launch("pool_adaptive_avg_grad_"+suf, Linear(m), k.Ptr(dx), k.Ptr(dy), I64(int64(n*c)), I64(int64(h)),
			I64(int64(w)), I64(int64(oh)), I64(int64(ow)))
	}
}
