package autograd

import (
	"container/heap"

	"github.com/headroom-ml/headroom/device"
	"github.com/headroom-ml/headroom/dtype"
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

// BackwardAll runs backward from several tensors at once, each seeded with
// its gradient (same shape; not consumed; nil means ones for a
// one-element tensor): torch.autograd.backward(tensors, grad_tensors).
// Nodes reachable from several roots run once, after all their consumers.
func BackwardAll(ts, grads []*Tensor, opts ...BackwardOption) error {
	return Try(func() {
		if len(ts) != len(grads) {
			fail("backward", "%d tensors and %d gradients", len(ts), len(grads))
		}
		for i, t := range ts {
			begin("backward", t, grads[i])
			if grads[i] == nil && t.Len() != 1 {
				fail("backward", "tensor %d of shape %v is not a scalar and has no gradient", i, t.shape)
			}
			if grads[i] != nil && !sameShape(grads[i].shape, t.shape) {
				fail("backward", "gradient %d shape %v differs from tensor shape %v", i, grads[i].shape, t.shape)
			}
		}
		runBackward(ts, grads, opts)
	})
}

// backward runs the engine from t, seeded with grad (ones when nil).
func (t *Tensor) backward(grad *Tensor, opts []BackwardOption) {
	runBackward([]*Tensor{t}, []*Tensor{grad}, opts)
}

// runBackward is the engine: it seeds the roots, counts for every node
// reachable from them the edges into it, and runs the nodes whose consumers
// have all run, newest first.
func runBackward(roots, grads []*Tensor, opts []BackwardOption) {
	var bo backwardOpts
	for _, f := range opts {
		f(&bo)
	}
	var s *Scope
	for _, t := range roots {
		if !t.requiresGrad {
			fail("backward", "tensor %v does not require grad (no input requires grad, or it was made without grad)", t.shape)
		}
		ts := t.Scope()
		if t.node != nil {
			ts = t.node.scope
		}
		if ts != nil {
			s = inner("backward", s, ts)
		}
	}
	if s != nil {
		// Backward steps compute in the dtypes the forward chose: no
		// autocast (checkpoint recomputation restores the forward's own).
		oldTag, oldPhase, oldCast := s.tag, s.phase, s.autocast
		s.tag, s.phase, s.autocast = device.Workspace, "backward", dtype.Invalid
		s.noGrad++
		defer func() {
			s.tag, s.phase, s.autocast = oldTag, oldPhase, oldCast
			s.noGrad--
		}()
	}
	seeds := make([]*Tensor, len(roots))
	for i, t := range roots {
		seed := alloc(s, t.dev, t.dt, t.shape, s.label("backward"))
		if k := t.dev.Kernels(); k != nil {
			if grads[i] == nil {
				k.Fill(seed.operand(), 1)
			} else {
				k.Copy(seed.operand(), grads[i].operand())
			}
		}
		seeds[i] = seed
	}
	// Leaf readiness (OnGradReady) is counted across nested passes — a
	// pass run from inside another's node, as a checkpoint recomputes its
	// segment: the outermost pass holds one placeholder contribution per
	// leaf a custom node declares (Custom.Leaves); the nested pass that
	// node runs adds the contributions it will make and drops the
	// placeholder; what the node did not touch is dropped when it returns.
	// A leaf is ready when its count reaches zero, in whichever pass.
	var r *Scope
	if s != nil {
		r = s.root()
	}
	nested := r != nil && r.passes > 0
	var starts []*node
	for i, t := range roots {
		if t.node == nil {
			accumulate(t, seeds[i])
			if !nested {
				t.gradReady()
			}
			seeds[i] = nil
			continue
		}
		starts = append(starts, t.node)
	}
	if len(starts) == 0 {
		return
	}
	if !nested {
		r.pending, r.held = map[*Tensor]int{}, map[*node]map[*Tensor]bool{}
		defer func() { r.pending, r.held = nil, nil }()
	}
	r.passes++
	defer func() { r.passes-- }()
	r.epoch++
	epoch := r.epoch

	// Count, for every node reachable from the roots, the edges into it,
	// and for every leaf the contributions it will receive.
	var stack []*node
	counted := map[*Tensor]bool{}
	countLeaf := func(l *Tensor) {
		r.pending[l]++
		counted[l] = true
	}
	leafDone := func(l *Tensor) {
		if r.pending[l]--; r.pending[l] == 0 {
			l.gradReady()
		}
	}
	for _, n := range starts {
		if n.epoch != epoch {
			n.epoch, n.deps = epoch, 0
			stack = append(stack, n)
		}
	}
	for len(stack) > 0 {
		n := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if len(n.inner) > 0 {
			h := map[*Tensor]bool{}
			for _, l := range n.inner {
				if !h[l] {
					h[l] = true
					r.pending[l]++
				}
			}
			r.held[n] = h
		}
		for _, e := range n.next {
			if e.leaf != nil {
				countLeaf(e.leaf)
			}
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

	if nested && len(r.running) > 0 {
		// This pass accounts for its leaves now: drop the placeholders the
		// node running it held for them.
		enclosing := r.running[len(r.running)-1]
		for l := range counted {
			if r.held[enclosing][l] {
				delete(r.held[enclosing], l)
				r.pending[l]--
			}
		}
	}
	ready := &nodeHeap{}
	for i, t := range roots {
		if seeds[i] == nil {
			continue
		}
		n := t.node
		first := n.grads == nil || allNil(n.grads)
		addGrad(n, t.out, seeds[i])
		if first && n.deps == 0 {
			heap.Push(ready, n)
		}
	}
	for ready.Len() > 0 {
		n := heap.Pop(ready).(*node)
		r.running = append(r.running, n)
		ins := n.run(bo.retain)
		r.running = r.running[:len(r.running)-1]
		for i, e := range n.next {
			var g *Tensor
			if i < len(ins) {
				g = ins[i]
				ins[i] = nil
			}
			switch {
			case e.leaf != nil:
				if g != nil {
					accumulate(e.leaf, g)
				}
				leafDone(e.leaf)
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
		for l := range r.held[n] {
			leafDone(l)
		}
		delete(r.held, n)
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
	if leaf.grad == nil && leaf.gradAlloc != nil {
		leaf.adoptGrad(leaf.gradAlloc(leaf), "grad_alloc")
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
	name, tag := leaf.name, device.Gradient
	if leaf.tempLeaf {
		tag = device.Workspace
	}
	if g.exclusive() && g.dt == leaf.dt {
		if !leaf.tempLeaf {
			g.blk.Retag(tag)
			g.blk.Relabel("grad", name)
		}
		g.kept, g.scope = true, nil
		leaf.grad = g
		return
	}
	gr := alloc(nil, leaf.dev, leaf.dt, leaf.shape, device.Label{Tag: tag, Op: "grad", Scope: name, Phase: "backward"})
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
