package autograd

import "github.com/headroom-ml/headroom/device"

// To returns a copy of t on dev (a new handle on t itself when dev is t's
// device). The copy goes through host memory; the gradient is copied back.
// Saves nothing.
func (t *Tensor) To(dev *device.Device) *Tensor {
	o := begin("to", t)
	if dev == t.dev {
		return o.viewOp(t, t.off, t.shape, t.strides)
	}
	out := alloc(o.s, dev, t.dt, t.shape, o.s.label("to"))
	transfer(out, t)
	src := t.dev
	o.grad([]*Tensor{out}, []*Tensor{t}, nil, func(c *bctx) []*Tensor {
		g := c.g[0]
		gb := &op{name: "to_backward", s: g.scope, dev: src}
		if g.kept {
			gb.s = nil
		}
		dx := gb.empty(g.dt, g.shape)
		transfer(dx, g)
		return []*Tensor{dx}
	})
	return out
}

// transfer copies src into the contiguous dst on another device, through
// the host. Nothing is copied when either device holds no data.
func transfer(dst, src *Tensor) {
	b := src.hostBytes("to", dst.dt)
	if dk := dst.dev.Kernels(); dk != nil && src.dev.Kernels() != nil {
		dk.Write(dst.operand(), b)
	}
	dst.blk.Bump()
}
