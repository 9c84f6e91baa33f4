package autograd

import (
	"github.com/headroom-ml/headroom/device"
	"github.com/headroom-ml/headroom/dtype"
)

// op is one operation being run: its name, the scope and device of its
// inputs, and whether it records a graph node.
type op struct {
	name   string
	s      *Scope
	dev    *device.Device
	record bool
	// orphan: an input requires grad but no input belongs to a scope, so a
	// graph is wanted and cannot be recorded.
	orphan bool
	ins    []*Tensor
}

// begin checks an op's inputs (nil entries are skipped): all live, all on
// one device, their scopes nested. The op's scope is the innermost one; it
// records a node when that scope has grad enabled and an input requires grad.
func begin(name string, ins ...*Tensor) *op {
	o := &op{name: name}
	needs := false
	for _, t := range ins {
		if t == nil {
			continue
		}
		t.live(name)
		if o.dev == nil {
			o.dev = t.dev
		} else if t.dev != o.dev {
			fail(name, "tensors on different devices: %s and %s", o.dev.Name(), t.dev.Name())
		}
		if t.scope != nil && !t.kept {
			o.s = inner(name, o.s, t.scope)
		}
		needs = needs || t.requiresGrad
	}
	for _, t := range ins {
		if t != nil && t.blk == nil { // fetching a later input unbound this one
			fail(name, "input %v %s (%s) lost its storage while another input of the op was fetched: the inputs' fetch functions must not unbind one another", t.shape, t.dt, t.describe())
		}
	}
	o.record = needs && o.s != nil && o.s.noGrad == 0
	o.orphan = needs && o.s == nil
	o.ins = ins
	return o
}

// records reports whether the op records a node; it fails for an orphan op.
func (o *op) records() bool {
	if o.orphan {
		name := ""
		for _, t := range o.ins {
			if t != nil && t.requiresGrad {
				name = t.describe()
				break
			}
		}
		fail(o.name, "an input (%s) requires grad but no input belongs to a Scope, so no graph can be recorded: attach it with Scope.Use, or Detach it if no gradient is wanted", name)
	}
	return o.record
}

// inner returns the deeper of two nested scopes.
func inner(name string, a, b *Scope) *Scope {
	if a == nil || a == b {
		return b
	}
	if a.depth < b.depth {
		a, b = b, a
	}
	for p := a; p != nil; p = p.parent {
		if p == b {
			return a
		}
	}
	fail(name, "tensors from two unrelated scopes")
	return nil
}

// k returns the device's kernels, nil on meta.
func (o *op) k() device.Kernels { return o.dev.Kernels() }

// empty allocates an uninitialised contiguous output owned by the op's scope.
func (o *op) empty(dt dtype.DType, shape []int) *Tensor {
	return alloc(o.s, o.dev, dt, shape, o.s.label(o.name))
}

// zeros allocates a zero-filled output.
func (o *op) zeros(dt dtype.DType, shape []int) *Tensor {
	t := o.empty(dt, shape)
	if k := o.k(); k != nil {
		k.Fill(t.operand(), 0)
	}
	return t
}

// scratch allocates workspace that the op frees before it returns. The
// op's scope owns it too, so that it goes with the scope when the op
// panics before freeing it (out of memory in a later allocation).
func (o *op) scratch(dt dtype.DType, shape []int) *Tensor {
	l := o.s.label(o.name)
	l.Tag = device.Workspace
	return alloc(o.s, o.dev, dt, shape, l)
}

// alloc makes a contiguous tensor with a new block, owned by s (or
// free-standing when s is nil). It panics with *device.OOMError.
func alloc(s *Scope, dev *device.Device, dt dtype.DType, shape []int, l device.Label) *Tensor {
	t := handle(l.Op, dev, dt, shape)
	if s == nil {
		t.blk = dev.MustAlloc(int64(numel(shape))*int64(dt.Size()), l)
		return t
	}
	s.hold(l.Op)
	defer s.unhold()
	t.blk = dev.MustAlloc(int64(numel(shape))*int64(dt.Size()), l)
	s.ownHeld(t)
	return t
}

// view makes a new handle on t's storage with another layout, owned by the
// op's scope.
func (o *op) view(t *Tensor, off int, shape, strides []int) *Tensor {
	t.blk.Retain()
	v := &Tensor{blk: t.blk, dev: t.dev, off: off, shape: shape, strides: strides, dt: t.dt}
	o.s.own(o.name, v)
	return v
}

// grad records a graph node for outs when the op records, saving the given
// tensors for backward. fn computes the inputs' gradients.
func (o *op) grad(outs []*Tensor, ins []*Tensor, saved []*Tensor, fn backwardFn) *node {
	if !o.records() {
		return nil
	}
	o.s.hold(o.name)
	defer o.s.unhold()
	return o.s.newNode(o.name, outs, ins, saved, fn)
}

// rawView returns a free-standing handle on t's storage that records
// nothing and requires no grad: for an op's internal use, released by it.
func rawView(t *Tensor, off int, shape, strides []int) *Tensor {
	t.blk.Retain()
	return &Tensor{blk: t.blk, dev: t.dev, off: off, shape: shape, strides: strides, dt: t.dt}
}

// denseWork returns t when it is contiguous, else a contiguous copy
// borrowed as the op's workspace, with the function that releases the copy.
func (o *op) denseWork(t *Tensor) (*Tensor, func()) {
	if t.IsContiguous() {
		return t, func() {}
	}
	c := o.scratch(t.dt, t.shape)
	if k := o.k(); k != nil {
		k.Copy(c.operand(), t.operand())
	}
	return c, c.Release
}

// computeDType is the dtype kernels compute a float dtype in.
func computeDType(dt dtype.DType) dtype.DType {
	if dt == dtype.F64 {
		return dtype.F64
	}
	return dtype.F32
}

// handle checks shape and dt for op and returns a dense handle of them on
// dev, without storage.
func handle(op string, dev *device.Device, dt dtype.DType, shape []int) *Tensor {
	for _, d := range shape {
		if d < 0 {
			fail(op, "negative dimension in shape %v", shape)
		}
	}
	if !dt.Valid() {
		fail(op, "invalid dtype %v", dt)
	}
	shape = append([]int(nil), shape...)
	return &Tensor{dev: dev, shape: shape, strides: denseStrides(shape), dt: dt}
}
