package optim

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/headroom-ml/headroom/autograd"
)

// state returns the optimizer's tensors by name ("exp_avg.fc1.weight")
// and the scalar "step"; optimizers add their hyperparameters.
func (b *base) state() State {
	s := State{Tensors: map[string]*autograd.Tensor{}, Scalars: map[string]float64{"step": float64(b.steps), "lr": b.lr}}
	for _, sl := range b.slots {
		for i, t := range sl.state {
			s.Tensors[b.names[i]+"."+sl.name] = t
		}
	}
	return s
}

// hyper is a hyperparameter that a loaded State must match.
type hyper struct {
	name string
	v    float64
}

// loaded is what Load has checked and is about to restore.
type loaded struct {
	src   map[*slot][]*autograd.Tensor // one source per state name
	steps int
	lr    float64
}

// check validates a State against the optimizer without changing anything:
// every scalar is known (fixed names, and "<prefix>.<param>" for each
// prefix in perSlot), "step" and "lr" are valid, each hyperparameter equals
// the optimizer's, every tensor name is "<state>.<param>" for a parameter
// of this optimizer with all of its state present, and every tensor is
// live, contiguous, and has its parameter's shape and dtype.
func (b *base) check(s State, hypers []hyper, perSlot ...string) (loaded, error) {
	l := loaded{src: map[*slot][]*autograd.Tensor{}}
	fail := func(format string, args ...any) (loaded, error) {
		return loaded{}, fmt.Errorf("%s: load: "+format, append([]any{b.kind}, args...)...)
	}
	known := map[string]bool{"step": true, "lr": true}
	for _, h := range hypers {
		known[h.name] = true
	}
	for _, name := range sortedKeys(s.Scalars) {
		if known[name] {
			continue
		}
		pre, param, ok := strings.Cut(name, ".")
		if !ok || !slices.Contains(perSlot, pre) || b.byName[param] == nil {
			return fail("unknown scalar %q (a state from another kind of optimizer or other parameters?)", name)
		}
	}
	for _, name := range []string{"step", "lr"} {
		if _, ok := s.Scalars[name]; !ok {
			return fail("scalar %q is missing", name)
		}
	}
	steps, ok := count(s.Scalars["step"])
	if !ok {
		return fail("step %v is not a count", s.Scalars["step"])
	}
	l.steps, l.lr = steps, s.Scalars["lr"]
	if math.IsNaN(l.lr) || math.IsInf(l.lr, 0) || l.lr < 0 {
		return fail("lr %v, want a finite value ≥ 0", l.lr)
	}
	for _, h := range hypers {
		v, ok := s.Scalars[h.name]
		switch {
		case !ok:
			return fail("scalar %q is missing", h.name)
		case v != h.v && !(math.IsNaN(v) && math.IsNaN(h.v)):
			return fail("state has %s = %v, this optimizer %v; make the optimizer with the saved run's settings", h.name, v, h.v)
		}
	}
	for _, name := range sortedKeys(s.Tensors) {
		t := s.Tensors[name]
		i, sl := -1, (*slot)(nil)
		for j, n := range b.names {
			if p, ok := strings.CutPrefix(name, n+"."); ok && b.byName[p] != nil {
				i, sl = j, b.byName[p]
			}
		}
		switch {
		case sl == nil:
			return fail("unknown tensor %q (want %s followed by a parameter name)", name, names(b.names))
		case t == nil || t.Released():
			return fail("tensor %q is nil or released", name)
		case !sameShape(t.Shape(), sl.t.Shape()) || t.DType() != b.stateDType(sl):
			return fail("tensor %q is %v %s, want %v %s", name, t.Shape(), t.DType(), sl.t.Shape(), b.stateDType(sl))
		case !t.IsContiguous():
			return fail("tensor %q (strides %v) is not contiguous", name, t.Strides())
		}
		if l.src[sl] == nil {
			l.src[sl] = make([]*autograd.Tensor, len(b.names))
		}
		l.src[sl][i] = t
	}
	for _, sl := range b.slots {
		if sl.t.Released() {
			return fail("parameter %q was released", sl.name)
		}
		for i, t := range l.src[sl] {
			if t == nil {
				return fail("tensor %q is missing (the state has other tensors of %q)", b.names[i]+"."+sl.name, sl.name)
			}
		}
	}
	return l, nil
}

// restore copies checked state in: it allocates what is missing (all or
// nothing), copies every tensor, frees the state of parameters the State
// has none for, and sets the counters. setSlot, when not nil, sets a
// slot's own scalars.
func (b *base) restore(l loaded, setSlot func(*slot)) error {
	var need []*slot
	for _, sl := range b.slots {
		if l.src[sl] != nil {
			need = append(need, sl)
		}
	}
	if err := b.allocate("load", need); err != nil {
		return err
	}
	for _, sl := range b.slots {
		src := l.src[sl]
		if src == nil {
			for _, t := range sl.state {
				t.Release()
			}
			sl.state, sl.step = nil, 0
			continue
		}
		for i, t := range sl.state {
			if t != src[i] {
				t.CopyFrom(src[i])
			}
		}
		if setSlot != nil {
			setSlot(sl)
		}
	}
	b.steps, b.lr = l.steps, l.lr
	return nil
}

// count converts a scalar holding a non-negative integer.
func count(v float64) (int, bool) {
	if v < 0 || v != math.Trunc(v) || v > 1<<53 {
		return 0, false
	}
	return int(v), true
}

func sortedKeys[V any](m map[string]V) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}

func names(ns []string) string {
	if len(ns) == 0 {
		return "no tensors"
	}
	return strings.Join(ns, " or ")
}
