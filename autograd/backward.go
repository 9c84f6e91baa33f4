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

// pass is one backward pass: the scope its ops run in, and what it holds
// so that a failure can give it back.
type pass struct {
	// s is the innermost scope of the roots: backward's ops run in it, and
	// the saved tensors they read belong to it while a node runs.
	s      *Scope
	r      *Scope // s's root: node sequence, epochs and leaf readiness
	retain bool
	nested bool // run from inside another pass's node (a checkpoint's)
	epoch  uint64
	// mark is len(s.owned) when the pass began: what s owns beyond it was
	// made by the pass.
	mark int
	// nodes are those the pass reaches.
	nodes []*node
	// flight holds the gradients the pass made and has not yet handed to
	// a node or a leaf: the seeds, then each node's input gradients.
	flight []*Tensor
}

// runBackward is the engine: it seeds the roots, counts for every node
// reachable from them the edges into it, and runs the nodes whose consumers
// have all run, newest first. When anything fails (out of memory, misuse)
// it gives back every gradient it made before the panic goes on, so that
// the device holds what it held before the pass plus the leaves'
// gradients (and, until the scope is released, the graph).
func runBackward(roots, grads []*Tensor, opts []BackwardOption) {
	var bo backwardOpts
	for _, f := range opts {
		f(&bo)
	}
	p := &pass{retain: bo.retain, s: passScope(roots)}
	if s := p.s; s != nil {
		// Backward steps compute in the dtypes the forward chose: no
		// autocast (checkpoint recomputation restores the forward's own).
		oldTag, oldPhase, oldCast := s.tag, s.phase, s.autocast
		s.tag, s.phase, s.autocast = device.Workspace, "backward", dtype.Invalid
		s.noGrad++
		p.r, p.mark = s.root(), len(s.owned)
		defer func() {
			s.tag, s.phase, s.autocast = oldTag, oldPhase, oldCast
			s.noGrad--
		}()
	}
	defer p.recoverFailure()
	p.flight = p.seeds(roots, grads)
	starts := p.leafRoots(roots)
	if len(starts) == 0 {
		return
	}
	r := p.r
	p.nested = r.passes > 0
	if !p.nested {
		r.pending, r.held = map[*Tensor]int{}, map[*node]map[*Tensor]bool{}
		defer func() { r.pending, r.held = nil, nil }()
	}
	r.passes++
	depth := len(r.running)
	defer func() { r.passes--; r.running = r.running[:depth] }()
	r.epoch++
	p.epoch = r.epoch
	p.count(starts)
	p.run(p.start(roots))
}

// passScope returns the innermost scope of the roots (nil when none has
// one), failing for a root that does not require grad.
func passScope(roots []*Tensor) *Scope {
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
	return s
}

// seeds makes each root's first gradient: grads[i], copied, or ones.
func (p *pass) seeds(roots, grads []*Tensor) []*Tensor {
	seeds := make([]*Tensor, len(roots))
	for i, t := range roots {
		seed := alloc(p.s, t.dev, t.dt, t.shape, p.s.label("backward"))
		seeds[i] = seed
		p.flight = seeds[:i+1] // what a failure of the next allocation releases
		if k := t.dev.Kernels(); k != nil {
			if grads[i] == nil {
				k.Fill(seed.operand(), 1)
			} else {
				k.Copy(seed.operand(), grads[i].operand())
			}
		}
	}
	return seeds
}

// leafRoots gives roots that are leaves their seed and returns the nodes
// of the others.
func (p *pass) leafRoots(roots []*Tensor) []*node {
	var starts []*node
	for i, t := range roots {
		if t.node == nil {
			p.give(i, func(g *Tensor) { accumulate(t, g) })
			if p.r == nil || p.r.passes == 0 {
				t.gradReady()
			}
			continue
		}
		starts = append(starts, t.node)
	}
	return starts
}

// give hands flight[i] (when not nil) to consume, which takes it over when
// it returns; if consume panics the gradient stays in flight.
func (p *pass) give(i int, consume func(*Tensor)) {
	if g := p.flight[i]; g != nil {
		consume(g)
		p.flight[i] = nil
	}
}

// count finds, for every node reachable from starts, the edges into it,
// and for every leaf the contributions it will receive.
func (p *pass) count(starts []*node) {
	r := p.r
	counted := map[*Tensor]bool{} // the leaves the pass sends gradients to
	var stack []*node
	visit := func(n *node) {
		if n.epoch != p.epoch {
			n.epoch, n.deps = p.epoch, 0
			stack = append(stack, n)
			p.nodes = append(p.nodes, n)
		}
	}
	for _, n := range starts {
		visit(n)
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
				r.pending[e.leaf]++
				counted[e.leaf] = true
			}
			if e.n != nil {
				visit(e.n)
				e.n.deps++
			}
		}
	}
	if p.nested && len(r.running) > 0 {
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
}

// start adds the seeds to their roots' nodes and returns the nodes ready
// to run.
func (p *pass) start(roots []*Tensor) *nodeHeap {
	ready := &nodeHeap{}
	for i, t := range roots {
		if p.flight[i] == nil {
			continue
		}
		n := t.node
		first := n.grads == nil || allNil(n.grads)
		p.give(i, func(g *Tensor) { addGrad(n, t.out, g) })
		if first && n.deps == 0 {
			heap.Push(ready, n)
		}
	}
	return ready
}

// run runs the ready nodes, newest first, passing each one's input
// gradients on to the nodes and leaves they belong to.
func (p *pass) run(ready *nodeHeap) {
	r := p.r
	for ready.Len() > 0 {
		n := heap.Pop(ready).(*node)
		r.running = append(r.running, n)
		p.flight = n.run(p.s, p.retain)
		r.running = r.running[:len(r.running)-1]
		p.adopt()
		for i, e := range n.next {
			switch {
			case i >= len(p.flight):
				if e.leaf != nil {
					p.leafDone(e.leaf)
				} else if e.n != nil {
					p.ready(ready, e.n)
				}
			case e.leaf != nil:
				p.give(i, func(g *Tensor) { accumulate(e.leaf, g) })
				p.leafDone(e.leaf)
			case e.n != nil:
				p.give(i, func(g *Tensor) { addGrad(e.n, e.idx, g) })
				p.ready(ready, e.n)
			}
		}
		p.releaseFlight()
		for l := range r.held[n] {
			p.leafDone(l)
		}
		delete(r.held, n)
	}
}

// adopt makes the pass's scope own the gradients in flight that belong to
// no scope (a custom node's, taken from a leaf: TakeGrad), so that the ops
// consuming them run in the pass's scope — tagged workspace, released with
// it — like those consuming any other gradient.
func (p *pass) adopt() {
	if p.s == nil {
		return
	}
	for _, g := range p.flight {
		if g != nil && g.Scope() == nil {
			g.kept = false
			p.s.own("backward", g)
		}
	}
}

// ready counts one consumer of n as done and queues n after the last.
func (p *pass) ready(h *nodeHeap, n *node) {
	if n.deps--; n.deps == 0 {
		heap.Push(h, n)
	}
}

// leafDone counts one contribution to l as added; the last makes l ready.
func (p *pass) leafDone(l *Tensor) {
	if p.r.pending[l]--; p.r.pending[l] == 0 {
		l.gradReady()
	}
}

// releaseFlight releases the gradients still in flight: those of inputs
// that needed none, or everything when the pass fails.
func (p *pass) releaseFlight() {
	for i, g := range p.flight {
		if g != nil {
			g.Release()
			p.flight[i] = nil
		}
	}
}

// recoverFailure, deferred by runBackward, gives back what the pass holds
// when it panics — gradients in flight, the gradients waiting at the nodes
// it reached, and every tensor it made in its scope (the temporaries of
// the node that failed among them) — and panics on. What it added to the
// leaves' gradients stays: the caller zeroes them (ZeroGrad).
func (p *pass) recoverFailure() {
	r := recover()
	if r == nil {
		return
	}
	p.releaseFlight()
	for _, n := range p.nodes {
		n.clearGrads()
	}
	if p.s != nil {
		for _, t := range p.s.owned[p.mark:] {
			if !t.kept {
				t.Release()
			}
		}
	}
	panic(r)
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
// the gradient when g is exclusive and of the leaf's gradient dtype (a
// contribution of another dtype is widened into it: SetGradDType).
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
	if g.exclusive() && g.dt == leaf.GradDType() {
		if !leaf.tempLeaf {
			g.blk.Retag(tag)
			g.blk.Relabel("grad", name)
		}
		g.kept, g.scope = true, nil
		leaf.grad = g
		return
	}
	gr := alloc(nil, leaf.dev, leaf.GradDType(), leaf.shape, device.Label{Tag: tag, Op: "grad", Scope: name, Phase: "backward"})
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
