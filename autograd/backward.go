package autograd

import (
	"container/heap"

	"github.com/headroom-ml/headroom/device"
)

// BackwardOption changes how Backward runs.
type BackwardOption func(*backwardOpts)

type backwardOpts struct{ retain bool }

// RetainGraph keeps the graph's saved tensors after backward so that it can
// run again (they are then freed when the scope is released).
func RetainGraph() BackwardOption { return func(o *backwardOpts) { o.retain = true } }

// Backward computes the gradient of the scalar t with respect to every leaf
// that requires grad, adding it to the leaf's Grad. Each node's saved
// tensors are released as soon as its backward step has run (unless
// RetainGraph), and every intermediate gradient as soon as it is consumed.
// It returns *Error for misuse and *device.OOMError when memory runs out.
func (t *Tensor) Backward(opts ...BackwardOption) error {
	return Try(func() {
		t.live("backward")
		if t.Len() != 1 {
			fail("backward", "tensor of shape %v is not a scalar: use BackwardWith and a gradient of that shape", t.shape)
		}
		t.backward(nil, opts)
	})
}

// BackwardWith is Backward for a non-scalar t, seeded with grad (t's shape);
// grad is not consumed.
func (t *Tensor) BackwardWith(grad *Tensor, opts ...BackwardOption) error {
	return Try(func() {
		begin("backward", t, grad)
		if !sameShape(grad.shape, t.shape) {
			fail("backward", "gradient shape %v differs from tensor shape %v", grad.shape, t.shape)
		}
		t.backward(grad, opts)
	})
}

// backward runs the engine from t, seeded with grad (ones when nil).
func (t *Tensor) backward(grad *Tensor, opts []BackwardOption) {
	var bo backwardOpts
	for _, f := range opts {
		f(&bo)
	}
	if !t.requiresGrad {
		fail("backward", "tensor %v does not require grad (no input requires grad, or it was made without grad)", t.shape)
	}
	s := t.scope
	if t.node != nil {
		s = t.node.scope
	}
	if s != nil {
		oldTag, oldPhase := s.tag, s.phase
		s.tag, s.phase = device.Workspace, "backward"
		s.noGrad++
		defer func() {
			s.tag, s.phase = oldTag, oldPhase
			s.noGrad--
		}()
	}
	seed := alloc(s, t.dev, t.dt, t.shape, s.label("backward"))
	if k := t.dev.Kernels(); k != nil {
		if grad == nil {
			k.Fill(seed.operand(), 1)
		} else {
			k.Copy(seed.operand(), grad.operand())
		}
	}
	if t.node == nil {
		accumulate(t, seed)
		return
	}
	root := t.node
	r := s.root()
	r.epoch++
	epoch := r.epoch

	// Count, for every node reachable from the root, the edges into it.
	root.epoch, root.deps = epoch, 0
	stack := []*node{root}
	for len(stack) > 0 {
		n := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		for _, e := range n.next {
			if e.n == nil {
				continue
			}
			if e.n.epoch != epoch {
				e.n.epoch, e.n.deps = epoch, 0
				stack = append(stack, e.n)
			}
			e.n.deps++
		}
	}

	addGrad(root, t.out, seed)
	ready := &nodeHeap{root}
	for ready.Len() > 0 {
		n := heap.Pop(ready).(*node)
		ins := n.run(bo.retain)
		for i, e := range n.next {
			var g *Tensor
			if i < len(ins) {
				g = ins[i]
				ins[i] = nil
			}
			switch {
			case e.leaf != nil && g != nil:
				accumulate(e.leaf, g)
			case e.n != nil:
				if g != nil {
					addGrad(e.n, e.idx, g)
				}
				if e.n.deps--; e.n.deps == 0 {
					heap.Push(ready, e.n)
				}
			case g != nil:
				g.Release()
			}
		}
		for _, g := range ins {
			if g != nil {
				g.Release()
			}
		}
	}
}

// run executes a node's backward step and returns its input gradients.
func (n *node) run(retain bool) []*Tensor {
	if n.freed {
		n.clearGrads()
		fail("backward", "trying to backward through %s a second time: its saved tensors were freed; pass RetainGraph to the first Backward", n.op)
	}
	any := false
	for _, g := range n.grads {
		any = any || g != nil
	}
	if !any {
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
	c.saved, temp = n.unpack()
	ins := n.fn(c)
	for _, t := range temp {
		t.Release()
	}
	if !retain {
		n.free()
	}
	n.clearGrads()
	for i, g := range ins {
		if g == nil {
			continue
		}
		if i >= len(n.next) {
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
	old := n.grads[idx]
	if old == nil {
		n.grads[idx] = g
		return
	}
	n.grads[idx] = sumInto(old, g)
}

// sumInto returns acc+g, consuming both: in place when acc is exclusive.
func sumInto(acc, g *Tensor) *Tensor {
	if acc.exclusive() && acc.dt == g.dt {
		if k := acc.dev.Kernels(); k != nil {
			k.Axpy(1, g.operand(), acc.operand())
		}
		acc.blk.Bump()
		g.Release()
		return acc
	}
	sum := acc.Add(g)
	acc.Release()
	g.Release()
	return sum
}

// accumulate adds g (consumed) to leaf's gradient, adopting g's storage as
// the gradient when g is exclusive and of the leaf's dtype.
func accumulate(leaf *Tensor, g *Tensor) {
	if !sameShape(g.shape, leaf.shape) {
		fail("backward", "internal: gradient of shape %v for leaf %v", g.shape, leaf.shape)
	}
	if leaf.grad != nil {
		o := begin("accumulate_grad", leaf.grad, g)
		if k := o.k(); k != nil {
			k.Axpy(1, g.operand(), leaf.grad.operand())
		}
		leaf.grad.blk.Bump()
		g.Release()
		return
	}
	name := leaf.name
	if g.exclusive() && g.dt == leaf.dt {
		g.blk.Retag(device.Gradient)
		g.blk.Relabel("grad", name)
		g.kept, g.scope = true, nil
		leaf.grad = g
		return
	}
	gr := alloc(nil, leaf.dev, leaf.dt, leaf.shape, device.Label{Tag: device.Gradient, Op: "grad", Scope: name, Phase: "backward"})
	if k := leaf.dev.Kernels(); k != nil {
		k.Copy(gr.operand(), g.operand())
	}
	g.Release()
	leaf.grad = gr
}

// nodeHeap pops the most recently created node first.
type nodeHeap []*node

func (h nodeHeap) Len() int           { return len(h) }
func (h nodeHeap) Less(i, j int) bool { return h[i].seq > h[j].seq }
func (h nodeHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *nodeHeap) Push(x any)        { *h = append(*h, x.(*node)) }
func (h *nodeHeap) Pop() any {
	old := *h
	n := old[len(old)-1]
	*h = old[:len(old)-1]
	return n
}
