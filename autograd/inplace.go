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

// In-place activations. An op's output that the next op does not save —
// a Linear's output under a ReLU, which saves its own output — is needed
// by nothing once the next op has run, yet its handle, and the step's
// scope, keep it until they are released: fc.Forward(x).ReLU() holds both
// the linear output and the ReLU's until Scope.Release. Go cannot tell
// whether a caller still holds a *Tensor, so nothing frees it behind the
// caller's back; two explicit ways free it:
//
//   - Release the intermediate after its consumer ran (h := fc.Forward(x);
//     r := h.ReLU(); h.Release()), which nn.Sequential and the nn layers
//     do. The peak still holds both for a moment.
//   - Write the activation over it: fc.Forward(x).ReLUInPlace() (PyTorch's
//     relu_ and nn.ReLU(inplace=True)) allocates nothing, so the linear
//     output and the ReLU's are one buffer.
//
// Device.Unsaved (in the Summary and the OOM report) lists what is held
// without being saved, by creator, so the waste is visible either way.

// ReLUInPlace is ReLU written over t's storage (torch.relu_): it allocates
// nothing and returns t, which from then on is the ReLU's result (a new
// graph node, whose input is what t was; the block keeps its label, the
// op that allocated it). It saves t (its output) as ReLU does.
//
// It fails, before writing anything, unless t is the only reference to its
// storage — no view, no other handle, no op that saved it for backward
// (overwriting what backward will read would make its gradient wrong) —
// and t is not a leaf that requires grad (a parameter).
func (t *Tensor) ReLUInPlace() *Tensor { return unaryInPlace(device.Relu, "relu_", t) }

// SigmoidInPlace is Sigmoid written over t's storage (torch.sigmoid_), as
// ReLUInPlace.
func (t *Tensor) SigmoidInPlace() *Tensor { return unaryInPlace(device.Sigmoid, "sigmoid_", t) }

// TanhInPlace is Tanh written over t's storage (torch.tanh_), as
// ReLUInPlace.
func (t *Tensor) TanhInPlace() *Tensor { return unaryInPlace(device.Tanh, "tanh_", t) }

// unaryInPlace runs u, whose backward reads only its output, over t.
func unaryInPlace(u device.UnaryOp, name string, t *Tensor) *Tensor {
	o := begin(name, t)
	o.oneDType(true, operand{"input", t})
	switch {
	case t.requiresGrad && t.node == nil:
		fail(name, "input %v %s (%s) is a leaf that requires grad: it cannot be overwritten (use %s)", t.shape, t.dt, t.origin(), name[:len(name)-1])
	case t.blk.Saved() > 0:
		fail(name, "input %v %s (%s) is saved for backward by an op that reads it later: overwriting it would make that gradient wrong (use %s)", t.shape, t.dt, t.origin(), name[:len(name)-1])
	case t.blk.Refs() != 1:
		fail(name, "input %v %s (%s) shares its storage with %d other reference(s) (views or handles) that would see it change: release them first, or use %s", t.shape, t.dt, t.origin(), t.blk.Refs()-1, name[:len(name)-1])
	}
	if k := o.k(); k != nil {
		k.Unary(u, t.operand(), t.operand(), 0)
	}
	t.blk.Bump()
	o.grad([]*Tensor{t}, []*Tensor{t}, []*Tensor{nil, t}, unaryBackward(u, name, 0))
	return t
}
