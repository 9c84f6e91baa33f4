package autograd

import (
	"strings"
	"sync/atomic"

	"github.com/headroom-ml/headroom/device"
	"github.com/headroom-ml/headroom/dtype"
)

// Scope owns the tensors and graph of a unit of work — normally one
// training or evaluation step — and holds that work's modes: whether ops
// record a graph, the layer path and step phase that label allocations, and
// the saved-tensor hooks. Nothing of this is global: two goroutines with two
// scopes train two models independently.
//
// Every tensor an op makes from a scope's tensors belongs to that scope, and
// Release gives back all of them at once, with the graph's saved tensors.
// Code that is done with an intermediate sooner may Release it sooner; the
// engine itself frees each saved tensor as soon as backward has used it.
// A Scope, its children and its tensors belong to one goroutine at a
// time. Handing a scope to another goroutine is fine once the first is
// done with it (pass it through a channel); two goroutines using it at the
// same moment make the op that notices fail with *Error instead of
// corrupting it (owner.go says how, and what the check cannot see). It is
// reusable after Release.
type Scope struct {
	parent *Scope
	depth  int
	busy   atomic.Int32 // the in-use marker (root scope; see owner.go)
	inRun  atomic.Int32 // 1 while Run runs a step in the scope

	noGrad int
	tag    device.Tag
	phase  string
	path   []string
	where  string // strings.Join(path, ".")
	hooks  []SavedHooks
	outs   *OutputLog // SetOutputLog

	recomputing bool
	rng         *rngLog
	autocast    dtype.DType
	casts       map[castKey]*Tensor // autocast copies of parameters

	owned  []*Tensor
	nodes  []*node
	seq    uint64 // node counter, used from the root scope
	epoch  uint64 // backward passes, used from the root scope
	passes int    // backward passes running (nested ones inside), root scope

	// Leaf readiness across nested backward passes (root scope).
	pending map[*Tensor]int
	held    map[*node]map[*Tensor]bool
	running []*node
}

// NewScope returns an empty scope that records graphs, in phase "forward".
func NewScope() *Scope { return &Scope{tag: device.Activation, phase: "forward"} }

// Child returns a scope nested in s: it starts with s's modes, its tensors
// may be combined with s's, and its Release frees only what it owns.
func (s *Scope) Child() *Scope {
	c := &Scope{parent: s, depth: s.depth + 1, noGrad: s.noGrad, tag: s.tag, phase: s.phase, where: s.where, autocast: s.autocast}
	c.path = append(c.path, s.path...)
	c.hooks = append(c.hooks, s.hooks...)
	return c
}

func (s *Scope) root() *Scope {
	for s.parent != nil {
		s = s.parent
	}
	return s
}

// GradEnabled reports whether ops in the scope record a graph.
func (s *Scope) GradEnabled() bool { return s.noGrad == 0 }

// NoGrad runs f with graph recording off (torch.no_grad). Results made in f
// do not require grad and save nothing.
func (s *Scope) NoGrad(f func()) {
	s.hold("no_grad")
	s.noGrad++
	s.unhold()
	defer func() {
		s.hold("no_grad")
		s.noGrad--
		s.unhold()
	}()
	f()
}

// Enter pushes a layer name onto the path that labels allocations
// ("encoder" then "3" gives "encoder.3") and returns the function that pops
// it: defer s.Enter("conv1")().
func (s *Scope) Enter(name string) func() {
	s.hold("enter")
	defer s.unhold()
	s.path = append(s.path, name)
	old := s.where
	s.where = strings.Join(s.path, ".")
	return func() {
		s.hold("enter")
		defer s.unhold()
		s.path = s.path[:len(s.path)-1]
		s.where = old
	}
}

// Path returns the current layer path ("" at top level).
func (s *Scope) Path() string { return s.where }

// SetPhase sets the step phase that labels allocations ("forward",
// "backward", "optimizer", …). Backward sets "backward" while it runs.
func (s *Scope) SetPhase(p string) {
	s.hold("set_phase")
	s.phase = p
	s.unhold()
}

// Phase returns the current step phase.
func (s *Scope) Phase() string { return s.phase }

// label returns the allocation label of an op's output made now.
func (s *Scope) label(op string) device.Label {
	if s == nil {
		return device.Label{Tag: device.Other, Op: op}
	}
	return device.Label{Tag: s.tag, Op: op, Scope: s.where, Phase: s.phase}
}

// own registers a tensor that op made in the scope. When another
// goroutine holds the scope it drops t's reference to its storage and
// fails.
func (s *Scope) own(op string, t *Tensor) {
	if s == nil {
		return
	}
	if !s.root().busy.CompareAndSwap(0, 1) {
		t.blk.Release()
		t.blk = nil
		inUse(op)
	}
	s.owned = append(s.owned, t)
	t.scope = s
	s.unhold()
}

// ownHeld is own for a caller that holds the scope.
func (s *Scope) ownHeld(t *Tensor) {
	t.scope = s
	s.owned = append(s.owned, t)
}

// Keep hands a tensor from the scope to the caller: Release will no longer
// free it, and the caller must Release it. It returns t.
func (s *Scope) Keep(t *Tensor) *Tensor {
	if t.scope != s {
		fail("keep", "tensor %v is not owned by this scope", t.shape)
	}
	s.hold("keep")
	t.kept = true
	s.unhold()
	return t
}

// Owned returns how many tensors the scope owns that are not yet released.
func (s *Scope) Owned() int {
	n := 0
	for _, t := range s.owned {
		if !t.kept && t.blk != nil {
			n++
		}
	}
	return n
}

// Release frees everything the scope owns: the saved tensors of graph nodes
// that backward has not freed, and every tensor made in the scope that was
// neither released nor kept. The scope can then be used for the next step.
func (s *Scope) Release() {
	s.hold("release")
	defer s.unhold()
	for _, n := range s.nodes {
		n.free()
		n.clearGrads()
	}
	clear(s.nodes)
	s.nodes = s.nodes[:0]
	for _, t := range s.owned {
		if !t.kept {
			t.Release()
		}
	}
	clear(s.owned)
	s.owned = s.owned[:0]
	clear(s.casts)
}

// SavedHooks intercept what ops save for backward (torch.autograd.graph.
// saved_tensors_hooks): activation offload and compression are built on
// them.
type SavedHooks struct {
	// Pack receives a handle on a tensor an op saves; the hook owns it
	// (keeps it, or releases it after copying what it needs) and returns
	// what backward will pass to Unpack.
	Pack func(t *Tensor) any
	// Unpack returns a tensor equal to the one packed. The engine releases
	// the returned handle after the backward step that used it.
	Unpack func(p any) *Tensor
	// Free, if set, is called once when the graph no longer needs p (after
	// backward without RetainGraph, or when the scope is released).
	Free func(p any)
}

// PushSavedHooks makes h intercept tensors saved by ops from now on until
// the matching PopSavedHooks.
func (s *Scope) PushSavedHooks(h SavedHooks) {
	if h.Pack == nil || h.Unpack == nil {
		fail("push_saved_hooks", "Pack and Unpack must both be set")
	}
	s.hold("push_saved_hooks")
	s.hooks = append(s.hooks, h)
	s.unhold()
}

// PopSavedHooks removes the hooks pushed last.
func (s *Scope) PopSavedHooks() {
	if len(s.hooks) == 0 {
		fail("pop_saved_hooks", "no hooks pushed")
	}
	s.hold("pop_saved_hooks")
	s.hooks = s.hooks[:len(s.hooks)-1]
	s.unhold()
}

// Use returns a handle on t that belongs to the scope, recorded in its
// graph: gradients reaching it flow to t. Ops find their scope through their
// inputs; Use attaches a free-standing tensor (a parameter) to a step when
// an op's inputs would otherwise all be free-standing (slicing a positional
// embedding table, say). It allocates nothing.
func (s *Scope) Use(t *Tensor) *Tensor {
	t.live("use")
	o := &op{name: "use", s: s, dev: t.dev, record: s.noGrad == 0 && t.requiresGrad}
	return o.viewOp(t, t.off, t.shape, t.strides)
}

// Within sets the whole layer path that labels allocations (a module's full
// dotted name, "layer1.0.conv2") and returns the function that restores the
// previous one: defer s.Within(m.name)(). A nil scope does nothing, so
// modules may call it for inputs made outside any scope.
func (s *Scope) Within(path string) func() {
	if s == nil {
		return func() {}
	}
	s.hold("within")
	oldPath, oldWhere := s.path, s.where
	s.path, s.where = []string{path}, path
	s.unhold()
	return func() {
		s.hold("within")
		s.path, s.where = oldPath, oldWhere
		s.unhold()
	}
}

// Leaves returns the distinct leaves (parameters) that the graph recorded
// in the scope sends gradients to, directly or through custom nodes: what
// a checkpointed function's backward will contribute to.
func (s *Scope) Leaves() []*Tensor {
	seen := map[*Tensor]bool{}
	var out []*Tensor
	add := func(l *Tensor) {
		if l != nil && !l.tempLeaf && !seen[l] {
			seen[l] = true
			out = append(out, l)
		}
	}
	for _, n := range s.nodes {
		for _, e := range n.next {
			add(e.leaf)
		}
		for _, l := range n.inner {
			add(l)
		}
	}
	return out
}
