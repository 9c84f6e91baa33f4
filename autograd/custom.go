package autograd

import "github.com/headroom-ml/headroom/device"

// Custom describes a node with a user-defined backward, for Record.
type Custom struct {
	Name string
	// Outs are graph-less tensors (made without grad, or adopted) that the
	// node produces; Ins the tensors they depend on.
	Outs, Ins []*Tensor
	// Saved are kept for backward exactly as an op's saved tensors
	// (released after use, version-checked).
	Saved []*Tensor
	// RequiresGrad records the node even when no input requires grad:
	// for a function that reads parameters itself (a checkpointed layer).
	RequiresGrad bool
	// Leaves are the leaves Backward adds gradients to by running a nested
	// backward pass (the parameters of a checkpointed function). The
	// enclosing pass counts them, so that a leaf's OnGradReady runs once,
	// after its last contribution from any pass.
	Leaves []*Tensor
	// Backward receives the outputs' gradients (nil for an output that
	// received none), the saved tensors and which inputs need a gradient,
	// and returns one gradient per input (nil where not needed) as new
	// tensors. It runs with grad recording off, in phase "backward".
	Backward func(grads, saved []*Tensor, need []bool) []*Tensor
}

// Record gives tensors computed outside the graph a node with a custom
// backward: the mechanism for operations that manage their own
// recomputation (activation checkpointing) or their own memory. It records
// when the scope of ins and outs has grad enabled and an input requires
// grad (or c.RequiresGrad); otherwise the outputs stay plain tensors.
func Record(c Custom) {
	o := begin(c.Name, append(append([]*Tensor(nil), c.Ins...), c.Outs...)...)
	for _, t := range c.Outs {
		if t.node != nil || t.requiresGrad {
			fail(c.Name, "output %v already belongs to a graph (made by %s): Record needs graph-less outputs", t.shape, t.Creator())
		}
	}
	if c.RequiresGrad && o.s != nil && o.s.noGrad == 0 {
		o.record, o.orphan = true, false
	}
	n := o.grad(c.Outs, c.Ins, c.Saved, func(bc *bctx) []*Tensor { return c.Backward(bc.g, bc.saved, bc.need) })
	if n != nil {
		n.inner = append([]*Tensor(nil), c.Leaves...)
	}
}

// Adopt returns a new graph-less handle on t's storage owned by s: the way
// to carry a result out of a child scope that is about to be released.
func (s *Scope) Adopt(t *Tensor) *Tensor {
	t.live("adopt")
	o := &op{name: "adopt", s: s, dev: t.dev}
	return o.view(t, t.off, t.shape, t.strides)
}

// TakeGrad returns t's accumulated gradient and detaches it from t: the
// caller owns it (and releases it). nil when t has none.
func (t *Tensor) TakeGrad() *Tensor {
	g := t.grad
	t.grad = nil
	return g
}

// LeafOf returns a new handle on t's storage that is a leaf requiring grad,
// owned by s: for recomputing a function of t in isolation and collecting
// the gradient of t with TakeGrad afterwards. Its gradient is a temporary
// of backward (tagged workspace), not a parameter gradient.
func (s *Scope) LeafOf(t *Tensor) *Tensor {
	t.live("leaf_of")
	o := &op{name: "leaf_of", s: s, dev: t.dev}
	v := o.view(t, t.off, t.shape, t.strides)
	v.requiresGrad, v.tempLeaf = t.dt.IsFloat(), true
	return v
}

// Recompute runs f with grad recording on, outputs tagged activation and
// phase "recompute", and the scope marked as recomputing (batch-norm then
// leaves its running statistics alone, since the original forward already
// updated them). Activation checkpointing calls it from inside backward.
func (s *Scope) Recompute(f func()) {
	oldNoGrad, oldTag, oldPhase, oldRe := s.noGrad, s.tag, s.phase, s.recomputing
	s.noGrad, s.tag, s.phase, s.recomputing = 0, device.Activation, "recompute", true
	defer func() { s.noGrad, s.tag, s.phase, s.recomputing = oldNoGrad, oldTag, oldPhase, oldRe }()
	f()
}

// Recomputing reports whether the scope (or one it is nested in) is
// recomputing a forward pass.
func (s *Scope) Recomputing() bool {
	for ; s != nil; s = s.parent {
		if s.recomputing {
			return true
		}
	}
	return false
}

// RNGDraw is one draw of a Generator by an op: enough to give the op the
// same random numbers again.
type RNGDraw struct {
	gen          *Generator
	n            int
	seed, offset uint64
}

// rngLog records or replays draws; held by the scope that started it. A
// log started on a scope that already has one goes in front of it (outer):
// both record.
type rngLog struct {
	draws  []RNGDraw
	replay bool
	at     int
	outer  *rngLog
}

// LogRNG starts recording every generator draw made by ops in s (and
// scopes nested in it) and returns the function that stops and returns
// the draws in order. Logs nest: one started while another records on s
// (or on a scope s is nested in) records the same draws, and the other
// goes on recording.
func (s *Scope) LogRNG() func() []RNGDraw {
	old := s.rng
	s.rng = &rngLog{outer: old}
	return func() []RNGDraw {
		l := s.rng
		s.rng = old
		return l.draws
	}
}

// ReplayRNG makes the ops in s draw the given random numbers again, in
// order, instead of advancing their generators, until the returned
// function is called. A different sequence of draws (another generator or
// size) fails: the recomputation is not the forward it claims to repeat.
// Logs outside the replay record nothing of it: no generator advances.
func (s *Scope) ReplayRNG(draws []RNGDraw) func() {
	old := s.rng
	s.rng = &rngLog{draws: draws, replay: true, outer: old}
	return func() {
		l := s.rng
		s.rng = old
		if l.at != len(l.draws) {
			fail("replay_rng", "recomputation made %d random draws, the original forward %d", l.at, len(l.draws))
		}
	}
}

// RewindRNG puts every generator drawn in draws (a log from LogRNG) back
// where it stood before its first draw there: what a failed step does so
// that retrying it draws the same numbers (dropout masks) again.
func RewindRNG(draws []RNGDraw) {
	done := map[*Generator]bool{}
	for _, d := range draws {
		if !done[d.gen] {
			done[d.gen] = true
			d.gen.SetState(GeneratorState{Seed: d.seed, Offset: d.offset})
		}
	}
}

// draw returns (seed, offset) for n numbers from gen. The innermost
// replay among s and its enclosing scopes supplies them when there is one;
// otherwise gen does. Every log nested inside that source records them
// (a checkpoint inside a checkpoint logs what the outer one replays).
func (s *Scope) draw(gen *Generator, n int) (seed, offset uint64) {
	var logs []*rngLog
	var replay *rngLog
	for p := s; p != nil && replay == nil; p = p.parent {
		for l := p.rng; l != nil && replay == nil; l = l.outer {
			if l.replay {
				replay = l
			} else {
				logs = append(logs, l)
			}
		}
	}
	if replay != nil {
		if replay.at >= len(replay.draws) {
			fail("dropout", "recomputation draws more random numbers than the original forward (%d draws)", len(replay.draws))
		}
		d := replay.draws[replay.at]
		if d.gen != gen || d.n != n {
			fail("dropout", "recomputation draw %d (%d numbers) differs from the original (%d numbers, same generator: %v)", replay.at, n, d.n, d.gen == gen)
		}
		replay.at++
		seed, offset = d.seed, d.offset
	} else {
		seed, offset = gen.reserve(n)
	}
	for _, l := range logs {
		l.draws = append(l.draws, RNGDraw{gen: gen, n: n, seed: seed, offset: offset})
	}
	return seed, offset
}
