package autograd

import (
	"fmt"
	"strings"

	"github.com/headroom-ml/headroom/device"
	"github.com/headroom-ml/headroom/dtype"
)

// Tensor is an n-dimensional array on a device, with what autograd needs:
// whether it requires a gradient, the node that created it and, for leaves,
// its accumulated gradient.
//
// A Tensor is a handle holding one reference to its storage (a
// device.Block). Views (Reshape, Permute, Slice, Expand, Detach) are new
// handles on the same storage. A handle's reference goes when it is
// released: by Release, or by the Scope that owns it when that scope is
// released. Tensors made outside any scope (parameters, optimizer state)
// are owned by the caller, who releases them.
type Tensor struct {
	blk     *device.Block
	dev     *device.Device
	off     int
	shape   []int
	strides []int
	dt      dtype.DType

	scope *Scope // owner, nil when free-standing
	kept  bool   // ownership handed from scope to caller
	saved bool   // a node's handle on a tensor it saved: its reference counts as saved (Block.RetainSaved)

	node         *node // creator, nil for leaves
	out          int   // which output of node
	requiresGrad bool
	grad         *Tensor // accumulated gradient of a leaf
	name         string
	tempLeaf     bool // a LeafOf handle: its gradient is workspace

	gradHooks []*gradHook           // OnGradReady callbacks of a leaf
	gradAlloc func(*Tensor) *Tensor // SetGradAlloc's source of the leaf's gradient
	gradDT    dtype.DType           // SetGradDType's gradient dtype; Invalid: the leaf's

	unbound   bool          // Unbind dropped the leaf's storage; Bind or fetch gives it back
	fetch     func(*Tensor) // SetFetch: binds an unbound leaf when it is used
	saveHooks *SavedHooks   // SetSavedHooks: how ops save the leaf itself (or autocast's cast of it)
	casts     []*Tensor     // autocast's casts of a fetched leaf that hold storage: Unbind frees them
}

// Shape returns a copy of the tensor's dimensions.
func (t *Tensor) Shape() []int { return append([]int(nil), t.shape...) }

// Dim returns the size of dimension i (negative counts from the end).
func (t *Tensor) Dim(i int) int { return t.shape[axis("dim", i, len(t.shape))] }

// Rank returns the number of dimensions.
func (t *Tensor) Rank() int { return len(t.shape) }

// Len returns the number of elements.
func (t *Tensor) Len() int { return numel(t.shape) }

// Bytes returns the number of bytes of the tensor's elements.
func (t *Tensor) Bytes() int64 { return int64(t.Len()) * int64(t.dt.Size()) }

// DType returns the element type.
func (t *Tensor) DType() dtype.DType { return t.dt }

// Device returns the device holding the tensor.
func (t *Tensor) Device() *device.Device { return t.dev }

// Strides returns a copy of the element strides.
func (t *Tensor) Strides() []int { return append([]int(nil), t.strides...) }

// Offset returns the position of the tensor's first element in its Block,
// in elements (0 unless the tensor is a view such as a Slice): with
// Strides it locates the elements for code that moves a block's bytes
// itself (a communicator).
func (t *Tensor) Offset() int { return t.off }

// Block returns the storage block (nil after Release). It belongs to the
// tensor; callers that keep it must Retain it.
func (t *Tensor) Block() *device.Block { return t.blk }

// Name returns the tensor's name ("" unless set).
func (t *Tensor) Name() string { return t.name }

// SetName names the tensor; parameters are named after their module path.
func (t *Tensor) SetName(n string) *Tensor { t.name = n; return t }

// RequiresGrad reports whether gradients flow to or through the tensor.
func (t *Tensor) RequiresGrad() bool { return t.requiresGrad }

// SetRequiresGrad marks a leaf as needing a gradient (or not).
func (t *Tensor) SetRequiresGrad(v bool) *Tensor {
	if t.node != nil {
		fail("set_requires_grad", "tensor %v is the result of %s, not a leaf; use Detach", t.shape, t.node.op)
	}
	t.requiresGrad = v
	return t
}

// IsLeaf reports whether the tensor was not produced by a recorded op.
func (t *Tensor) IsLeaf() bool { return t.node == nil }

// Grad returns the gradient accumulated in a leaf by Backward, or nil. The
// gradient belongs to the leaf: do not Release it; use ZeroGrad.
func (t *Tensor) Grad() *Tensor { return t.grad }

// ZeroGrad releases the leaf's gradient (PyTorch's zero_grad with
// set_to_none): its memory returns now and the next Backward allocates it.
func (t *Tensor) ZeroGrad() {
	if t.grad != nil {
		t.grad.Release()
		t.grad = nil
	}
}

// Creator names the op that produced the tensor ("" for leaves).
func (t *Tensor) Creator() string {
	if t.node == nil {
		return ""
	}
	return t.node.op
}

// Released reports whether the handle has no storage: it was released,
// or it is a leaf that was unbound (Unbind) and not bound again.
func (t *Tensor) Released() bool { return t.blk == nil }

// Release drops the handle's reference to its storage (and, for a leaf, its
// gradient). The memory returns to the device when no other handle, view or
// saved-for-backward reference remains. Releasing twice is allowed.
func (t *Tensor) Release() {
	switch {
	case t.blk == nil:
	case t.saved:
		t.blk.ReleaseSaved()
	default:
		t.blk.Release()
	}
	t.blk = nil
	t.unbound, t.fetch, t.saveHooks = false, nil, nil
	t.ZeroGrad()
}

// IsContiguous reports whether the elements are dense in row-major order.
func (t *Tensor) IsContiguous() bool {
	want := 1
	for i := len(t.shape) - 1; i >= 0; i-- {
		if t.shape[i] != 1 && t.strides[i] != want {
			return false
		}
		want *= t.shape[i]
	}
	return true
}

// whole reports whether the tensor is contiguous and covers its whole block.
func (t *Tensor) whole() bool {
	return t.off == 0 && t.IsContiguous() && t.Bytes() == t.blk.Len()
}

// exclusive reports whether t is the only reference to a storage it covers
// wholly, so that writing it in place affects nothing else.
func (t *Tensor) exclusive() bool { return t.blk.Refs() == 1 && t.whole() }

// live panics if the tensor has no storage. An unbound leaf with a fetch
// function is bound by it first.
func (t *Tensor) live(op string) {
	if t.blk == nil && t.unbound && t.fetch != nil {
		t.fetch(t)
	}
	if t.blk == nil {
		switch {
		case t.unbound && t.fetch == nil:
			fail(op, "tensor %v %s (%s) is unbound (Unbind dropped its storage) and has no fetch function", t.shape, t.dt, t.describe())
		case t.unbound:
			fail(op, "tensor %v %s (%s) is unbound (Unbind dropped its storage) and its fetch function did not bind it", t.shape, t.dt, t.describe())
		}
		fail(op, "tensor %v %s (%s) used after Release", t.shape, t.dt, t.describe())
	}
}

func (t *Tensor) describe() string {
	switch {
	case t.name != "":
		return "named " + t.name
	case t.node != nil:
		return "made by " + t.node.op
	}
	return "a leaf"
}

// operand returns the tensor as a kernel operand.
func (t *Tensor) operand() device.Operand {
	return device.Operand{Block: t.blk, Off: t.off, DType: t.dt, Shape: t.shape, Strides: t.strides}
}

// String describes the tensor without reading its values.
func (t *Tensor) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "Tensor(%v, %s, %s", t.shape, t.dt, t.dev.Name())
	if t.name != "" {
		fmt.Fprintf(&b, ", %s", t.name)
	}
	if t.node != nil {
		fmt.Fprintf(&b, ", grad_fn=%s", t.node.op)
	} else if t.requiresGrad {
		b.WriteString(", requires_grad")
	}
	switch {
	case t.unbound:
		b.WriteString(", unbound")
	case t.blk == nil:
		b.WriteString(", released")
	}
	b.WriteString(")")
	return b.String()
}

func numel(shape []int) int {
	n := 1
	for _, s := range shape {
		n *= s
	}
	return n
}

func denseStrides(shape []int) []int {
	st := make([]int, len(shape))
	n := 1
	for i := len(shape) - 1; i >= 0; i-- {
		st[i] = n
		n *= shape[i]
	}
	return st
}

// axis normalises a possibly negative axis for a rank.
func axis(op string, a, rank int) int {
	if a < -rank || a >= rank {
		fail(op, "axis %d out of range for rank %d", a, rank)
	}
	if a < 0 {
		a += rank
	}
	return a
}

func sameShape(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// Scope returns the scope that owns the tensor (nil when free-standing).
func (t *Tensor) Scope() *Scope {
	if t.kept {
		return nil
	}
	return t.scope
}
