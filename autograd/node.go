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
	// onFree, when set, runs once when the node is freed (autocast's cached
	// cast drops its storage then: castParam).
	onFree func()
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
		sv := saved{version: t.blk.Version(), blk: t.blk, shape: t.shape}
		h := savedHandle(t)
		hk := hooks
		if t.saveHooks != nil { // a leaf's own hooks (or its autocast cast's: castshard.go) come first
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

// unpack returns the saved tensors for a backward step run in scope s,
// adding to temp, as it goes, the handles that the engine must release
// after the step (hook results; those made before a failure too). The
// node's own handles are lent to s until lend(nil); hook results that
// belong to no scope are given to s.
func (n *node) unpack(s *Scope, temp *[]*Tensor) []*Tensor {
	n.lend(s)
	ts := make([]*Tensor, len(n.saved))
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
			if t == nil {
				fail("backward", "saved-tensor hook Unpack for %s returned nil (want a tensor of shape %v)", n.op, sv.shape)
			}
			*temp = append(*temp, t)
			if !sameShape(t.shape, sv.shape) {
				fail("backward", "saved-tensor hook Unpack for %s returned a tensor of shape %v (want %v)", n.op, t.shape, sv.shape)
			}
			if t.scope == nil {
				t.scope = s
			}
			ts[i] = t
			continue
		}
		ts[i] = sv.t
	}
	return ts
}

// lend makes the node's saved handles belong to s (nil: to no scope), so
// that what a backward step makes from them alone belongs to s. s does not
// own them: the node releases them (free).
func (n *node) lend(s *Scope) {
	for _, sv := range n.saved {
		if sv.t != nil {
			sv.t.scope = s
		}
	}
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
	if f := n.onFree; f != nil {
		n.onFree = nil
		f()
	}
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

func allNil(ts []*Tensor) bool {
	for _, t := range ts {
		if t != nil {
			return false
		}
	}
	return true
}

// run executes a node's backward step in scope s and returns its input
// gradients. The saved tensors it reads belong to s meanwhile, so that
// what the step makes from them alone belongs to s too and cannot outlive
// a failure; the handles hooks unpacked are released whatever happens.
func (n *node) run(s *Scope, retain bool) []*Tensor {
	if n.freed {
		n.clearGrads()
		fail("backward", "trying to backward through %s a second time: its saved tensors were freed; pass RetainGraph to the first Backward", n.op)
	}
	if allNil(n.grads) {
		if !retain {
			n.free()
		}
		return nil
	}
	c := &bctx{g: n.grads, need: make([]bool, len(n.next))}
	for i, e := range n.next {
		c.need[i] = e.n != nil || e.leaf != nil
	}
	var temp []*Tensor
	defer func() {
		for _, t := range temp {
			t.Release()
		}
	}()
	defer n.lend(nil)
	c.saved = n.unpack(s, &temp)
	ins := n.fn(c)
	if !retain {
		n.free()
	}
	n.clearGrads()
	for i := len(n.next); i < len(ins); i++ {
		if ins[i] != nil {
			for _, g := range ins {
				if g != nil {
					g.Release()
				}
			}
			fail("backward", "internal: %s returned %d gradients for %d inputs", n.op, len(ins), len(n.next))
		}
	}
	return ins
}

// addGrad adds g (consumed) to the gradient of output idx of n.
func addGrad(n *node, idx int, g *Tensor) {
	if n.grads == nil {
		n.grads = make([]*Tensor, len(n.outs))
	}
	if !sameShape(g.shape, n.outs[idx].shape) {
		fail("backward", "internal: gradient of shape %v for output %v of %s", g.shape, n.outs[idx].shape, n.op)
	}
	// A gradient has its output's dtype (see dtypes.go): an F32 gradient
	// reaching a BF16 autocast output is cast down, as in PyTorch.
	if dt := n.outs[idx].dt; g.dt != dt && g.dt.IsFloat() && dt.IsFloat() {
		c := g.Cast(dt)
		g.Release()
		g = c
	}
	old := n.grads[idx]
	if old == nil {
		n.grads[idx] = g
		return
	}
	n.grads[idx] = sumInto(old, g)
}
