package autograd

import "github.com/headroom-ml/headroom/dtype"

// OutputLog lets a recomputed region skip the arithmetic of chosen ops:
// while a scope logs, those ops keep a handle on each output they make, in
// order; while it replays, the same calls hand those outputs back instead
// of computing them (checkpoint.Selective). Linear, MatMul and Conv2d take
// part with their output, ScaledDotProductAttention with two entries per
// call: its output, then the log-sum-exp its backward reads.
type OutputLog struct {
	ops    map[string]bool
	outs   []*Tensor
	vers   []uint64 // each output's block version when logged
	replay bool
	next   int
}

// NewOutputLog returns a log that records the outputs of the named ops.
func NewOutputLog(ops map[string]bool) *OutputLog { return &OutputLog{ops: ops} }

// ReplayLog returns a log that gives outs back, in order, to the calls of
// the named ops that made them; a call whose entry is nil computes its
// output. The caller keeps owning outs.
func ReplayLog(ops map[string]bool, outs []*Tensor) *OutputLog {
	return &OutputLog{ops: ops, outs: outs, replay: true}
}

// Outputs returns the logged outputs in the order the ops made them: the
// caller owns these handles.
func (l *OutputLog) Outputs() []*Tensor { return l.outs }

// Modified reports whether logged output i was written in place after its
// op made it (it then no longer holds what the op computed).
func (l *OutputLog) Modified(i int) bool { return l.outs[i].blk.Version() != l.vers[i] }

// SetOutputLog makes the ops of s and of the scopes nested in it log into
// (or replay from) l, nil for none, and returns the log it replaces.
func (s *Scope) SetOutputLog(l *OutputLog) *OutputLog {
	old := s.outs
	s.outs = l
	return old
}

// outputLog returns the log of s or of the nearest scope it is nested in.
func (s *Scope) outputLog() *OutputLog {
	for ; s != nil; s = s.parent {
		if s.outs != nil {
			return s.outs
		}
	}
	return nil
}

// replayed returns a handle on the logged output of this call when the
// op's scope replays a log that covers it, else nil.
func (o *op) replayed(dt dtype.DType, shape []int) *Tensor {
	l := o.s.outputLog()
	if l == nil || !l.replay || !l.ops[o.name] {
		return nil
	}
	if l.next >= len(l.outs) {
		fail(o.name, "replay: more %s calls than the logged forward made (%d)", o.name, len(l.outs))
	}
	t := l.outs[l.next]
	l.next++
	if t == nil {
		return nil
	}
	if t.dt != dt || !sameShape(t.shape, shape) {
		fail(o.name, "replay: call %d made %v %s in the logged forward, now %v %s", l.next, t.shape, t.dt, shape, dt)
	}
	return o.view(t, t.off, t.shape, t.strides)
}

// replayedPair is replayed for an op that logs two tensors per call: both
// handles when the log holds both, else nil, nil (the call computes both).
func (o *op) replayedPair(dt1 dtype.DType, shape1 []int, dt2 dtype.DType, shape2 []int) (*Tensor, *Tensor) {
	a := o.replayed(dt1, shape1)
	b := o.replayed(dt2, shape2)
	if a == nil || b == nil {
		for _, t := range []*Tensor{a, b} {
			if t != nil {
				t.Release()
			}
		}
		return nil, nil
	}
	return a, b
}

// logged records out when the op's scope logs the op's outputs.
func (o *op) logged(out *Tensor) {
	if l := o.s.outputLog(); l != nil && !l.replay && l.ops[o.name] {
		l.outs = append(l.outs, alias(out))
		l.vers = append(l.vers, out.blk.Version())
	}
}
