package autograd

import (
	"github.com/headroom-ml/headroom/device"
	"github.com/headroom-ml/headroom/dtype"
)

// AddInPlace adds alpha·x to t in place (x broadcasts to t's shape; t must
// be contiguous). It is not recorded in the graph: use it for updates of
// parameters and buffers, not inside a forward pass. A tensor saved for
// backward that is changed afterwards makes that backward fail.
func (t *Tensor) AddInPlace(x *Tensor, alpha float64) {
	begin("add_inplace", t, x)
	if !t.IsContiguous() {
		fail("add_inplace", "destination %v with strides %v is not contiguous", t.shape, t.strides)
	}
	full := broadcastShapes("add_inplace", t.shape, x.shape)
	if !sameShape(full, t.shape) {
		fail("add_inplace", "%v does not broadcast to the destination's %v", x.shape, t.shape)
	}
	if k := t.dev.Kernels(); k != nil {
		k.Axpy(alpha, x.expanded(t.shape), t.operand())
	}
	t.blk.Bump()
}

// ScaleInPlace multiplies t by c in place (not recorded in the graph).
func (t *Tensor) ScaleInPlace(c float64) {
	t.live("scale_inplace")
	if k := t.dev.Kernels(); k != nil {
		k.Unary(device.Scale, t.operand(), t.operand(), c)
	}
	t.blk.Bump()
}

// CopyFrom copies src's values (broadcast to t's shape, converted to t's
// dtype; src may live on another device) into t in place, not recorded.
func (t *Tensor) CopyFrom(src *Tensor) {
	t.live("copy_from")
	src.live("copy_from")
	if src.dev != t.dev {
		if !sameShape(src.shape, t.shape) || !t.IsContiguous() {
			fail("copy_from", "across devices the shapes must match and the destination be contiguous: %v into %v", src.shape, t.shape)
		}
		transfer(t, src)
		return
	}
	full := broadcastShapes("copy_from", t.shape, src.shape)
	if !sameShape(full, t.shape) {
		fail("copy_from", "%v does not broadcast to the destination's %v", src.shape, t.shape)
	}
	copyInto(t, src)
}

// SumSquares returns Σ t² accumulated in float64 (an explicit read of one
// number from the device; 0 on meta). A non-finite result means t holds an
// infinity or a NaN: loss scaling uses it to detect overflowed gradients.
// It borrows one F64 element of workspace.
func (t *Tensor) SumSquares() float64 {
	t.live("sum_squares")
	src := t
	if !t.IsContiguous() {
		src = copyDense(t)
		defer src.Release()
	}
	acc := alloc(nil, t.dev, dtype.F64, []int{1}, device.Label{Tag: device.Workspace, Op: "sum_squares", Scope: t.name})
	defer acc.Release()
	k := t.dev.Kernels()
	if k == nil {
		return 0
	}
	k.SumSquares(acc.operand(), src.operand())
	return acc.Float64s()[0]
}
