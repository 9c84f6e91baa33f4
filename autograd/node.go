package autograd

import (
	"github.com/headroom-ml/headroom/device"
	"github.com/headroom-ml/headroom/dtype"
)

// backwardFn computes an op's input gradients from its output gradients.
type backwardFn func(c *bctx) []*Tensor

// bctx is what a backward function receives.
type bctx struct {
	// g holds the gradient of each output; for multi-output ops an entry is
	// nil when no gradient reached that output.
	g []*Tensor
	// saved holds the tensors the op saved, in order.
	saved []*Tensor
	// need says which inputs need a gradient; others may be returned nil.
	need []bool
}

// edge points from a node to where an input's gradient goes: another
// node's output, or a leaf's accumulator; both nil when the input needs none.
type edge struct {
	n    *node
	idx  int
	leaf *Tensor
}

// saved is a tensor saved for backward: a handle the node owns, or what the
// scope's saved-tensor hooks packed it into.
type saved struct {
	t       *Tensor
	packed  any
	hooks   *SavedHooks
	version uint64
	blk     *device.Block // to check the version at unpack
	shape   []int
}

// outMeta describes an output, to make zeros for a missing gradient.
type outMeta struct {
	shape []int
	dt    dtype.DType
}

// node is one recorded op in the graph.
type node struct {
	op    string
	seq   uint64
	scope *Scope
	next  []edge
	saved []saved
	fn    backwardFn
	outs  []outMeta
	freed bool
	// inner are the leaves a custom node's backward reaches through a
	// nested backward pass (Custom.Leaves).
	inner []*Tensor

	// engine state during one backward pass
	grads []*Tensor
	deps  int
	epoch uint64
}

// newNode records an op's node and points its outputs at it.
func (s *Scope) newNode(opName string, outs, ins, save []*Tensor, fn backwardFn) *node {
	r := s.root()
	r.seq++
	n := &node{op: opName, seq: r.seq, scope: s, fn: fn}
	n.next = make([]edge, len(ins))
	for i, t := range ins {
		if t == nil || !t.requiresGrad {
			continue
		}
		if t.node != nil {
			n.next[i] = edge{n: t.node, idx: t.out}
		} else {
			n.next[i] = edge{leaf: t}
		}
	}
	var hooks *SavedHooks
	if len(s.hooks) > 0 {
		hooks = &s.hooks[len(s.hooks)-1]
	}
	n.saved = make([]saved, len(save))
	for i, t := range save {
		if t == nil {
			continue
		}
		t.blk.RetainSaved()
		h := &Tensor{blk: t.blk, dev: t.dev, off: t.off, shape: t.shape, strides: t.strides, dt: t.dt, name: t.name, saved: true}
		sv := saved{version: t.blk.Version(), blk: t.blk, shape: t.shape}
		hk := hooks
		if t.saveHooks != nil && t.node == nil { // the leaf's own hooks come first
			hk = t.saveHooks
		}
		if hk != nil {
			sv.hooks = hk
			sv.packed = hk.Pack(h)
		} else {
			sv.t = h
		}
		n.saved[i] = sv
	}
	n.outs = make([]outMeta, len(outs))
	for i, t := range outs {
		n.outs[i] = outMeta{shape: t.shape, dt: t.dt}
		t.node, t.out, t.requiresGrad = n, i, true
	}
	s.nodes = append(s.nodes, n)
	return n
}

// unpack returns the saved tensors for a backward step, and those handles
// that the engine must release after the step (hook results).
func (n *node) unpack() (ts, temp []*Tensor) {
	ts = make([]*Tensor, len(n.saved))
	for i, sv := range n.saved {
		if sv.blk == nil {
			continue
		}
		if sv.blk.Version() != sv.version {
			fail("backward", "a tensor %v saved by %s for backward was modified in place afterwards (version %d, saved at %d)",
				sv.shape, n.op, sv.blk.Version(), sv.version)
		}
		if sv.hooks != nil {
			t := sv.hooks.Unpack(sv.packed)
			if t == nil || !sameShape(t.shape, sv.shape) {
				fail("backward", "saved-tensor hook Unpack for %s returned a tensor of another shape (want %v)", n.op, sv.shape)
			}
			ts[i] = t
			temp = append(temp, t)
			continue
		}
		ts[i] = sv.t
	}
	return ts, temp
}

// free releases the node's saved tensors; backward through it then fails.
func (n *node) free() {
	if n.freed {
		return
	}
	n.freed = true
	for i, sv := range n.saved {
		switch {
		case sv.hooks != nil:
			if sv.hooks.Free != nil {
				sv.hooks.Free(sv.packed)
			}
		case sv.t != nil:
			sv.t.Release()
		}
		n.saved[i] = saved{}
	}
	n.fn = nil
}

// clearGrads releases gradients accumulated for the node's outputs.
func (n *node) clearGrads() {
	for i, g := range n.grads {
		if g != nil {
			g.Release()
			n.grads[i] = nil
		}
	}
}
