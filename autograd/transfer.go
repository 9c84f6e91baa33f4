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

// TransferChunk is the most host memory one copy between devices stages
// through: a copy of a contiguous tensor to a tensor of the same dtype
// moves it in pieces of at most this many bytes through one Go buffer, so
// To, activation offload and optimizer-state offload hold at most
// TransferChunk of uncounted host scratch per copy in flight, whatever the
// tensor's size. A strided source or a dtype change stages the whole
// tensor (its converted bytes) at once.
const TransferChunk = 4 << 20

// transferChunk is TransferChunk, a variable so tests can cut odd pieces.
var transferChunk = TransferChunk

// transfer copies src into the contiguous dst on another device, through
// the host. Nothing is copied when either device holds no data.
func transfer(dst, src *Tensor) {
	src.live("to")
	sk, dk := src.dev.Kernels(), dst.dev.Kernels()
	switch {
	case sk == nil || dk == nil:
	case src.dt == dst.dt && src.IsContiguous():
		copyChunked(dk, sk, dst.operand(), src.operand())
	default:
		dk.Write(dst.operand(), src.hostBytes("to", dst.dt))
	}
	dst.blk.Bump()
}

// copyChunked copies contiguous src into contiguous dst (same dtype and
// length, on devices with kernels dk and sk) in pieces of at most
// transferChunk bytes through one host buffer.
func copyChunked(dk, sk device.Kernels, dst, src device.Operand) {
	n, size := src.Len(), src.DType.Size()
	per := max(1, transferChunk/size)
	buf := make([]byte, min(n, per)*size)
	for i := 0; i < n; i += per {
		m := min(per, n-i)
		b := buf[:m*size]
		sk.Read(b, device.Operand{Block: src.Block, Off: src.Off + i, DType: src.DType, Shape: []int{m}})
		dk.Write(device.Operand{Block: dst.Block, Off: dst.Off + i, DType: dst.DType, Shape: []int{m}}, b)
	}
}
