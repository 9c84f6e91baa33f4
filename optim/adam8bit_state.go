package optim

import (
	"fmt"
	"math"

	"github.com/headroom-ml/headroom/autograd"
	"github.com/headroom-ml/headroom/dtype"
)

// qnames are the state tensor names of a quantised parameter, in the order
// of qslot.tensors: the last only with master weights.
var qnames = []string{"exp_avg", "exp_avg_sq", "exp_avg_absmax", "exp_avg_sq_absmax", "master"}

// qnames returns the state tensor names of this optimizer's quantised
// parameters.
func (a *Adam8bit) qnames() []string {
	if a.master {
		return qnames
	}
	return qnames[:4]
}

// hypers are the settings a loaded State must match.
func (a *Adam8bit) hypers() []hyper {
	return []hyper{{"beta1", a.beta1}, {"beta2", a.beta2}, {"eps", a.eps}, {"weight_decay", a.wd},
		{"decoupled_weight_decay", b2f(a.decoupled)}, {"master_weights", b2f(a.master)}, {"quant_block", float64(a.block)}}
}

// State returns Adam's State (see Adam.State) for the F32-state parameters
// and, for each quantised one, its codes "exp_avg.<name>" and
// "exp_avg_sq.<name>" (I8 tensors holding the raw 8-bit codes), their F32
// absmax arrays "exp_avg_absmax.<name>" and "exp_avg_sq_absmax.<name>",
// and "step.<name>" (and "master.<name>", its F32 master copy, with
// master weights); plus the scalar "quant_block". Loading it into an
// optimizer made with the same settings resumes bit for bit.
func (a *Adam8bit) State() State {
	s := State{Tensors: map[string]*autograd.Tensor{}, Scalars: map[string]float64{}}
	if a.small != nil {
		s = a.small.State()
	}
	for _, h := range a.hypers() {
		s.Scalars[h.name] = h.v
	}
	s.Scalars["step"], s.Scalars["lr"] = float64(a.steps), a.lr
	for _, q := range a.quant {
		for i, t := range q.tensors() {
			s.Tensors[qnames[i]+"."+q.name] = t
		}
		if q.m != nil {
			s.Scalars["step."+q.name] = float64(q.step)
		}
	}
	return s
}

// Load restores a State saved by an Adam8bit made with the same settings
// over the same parameters. Everything is checked, and missing state
// allocated, before anything is copied: on error the optimizer is
// unchanged (apart from state that may have been allocated, zero, as a
// fresh optimizer's).
func (a *Adam8bit) Load(s State) error {
	src, steps, rest, err := a.checkQuant(s)
	if err != nil {
		return err
	}
	var need []*qslot
	for _, q := range a.quant {
		if src[q] != nil {
			need = append(need, q)
		}
	}
	if err := a.allocate(need); err != nil {
		return err
	}
	if a.small != nil {
		if err := a.small.Load(rest); err != nil {
			return err
		}
	}
	for _, q := range a.quant {
		if src[q] == nil {
			for _, t := range q.tensors() {
				t.Release()
			}
			q.clear()
			continue
		}
		for i, t := range q.tensors() {
			if t != src[q][i] {
				t.CopyFrom(src[q][i])
			}
		}
		q.step = steps[q]
	}
	a.steps, _ = count(s.Scalars["step"])
	a.SetLR(s.Scalars["lr"])
	return nil
}

// checkQuant checks the scalars and the quantised parameters' part of s and
// returns that part's tensors and steps, and the rest of s for the F32 Adam.
func (a *Adam8bit) checkQuant(s State) (map[*qslot][]*autograd.Tensor, map[*qslot]int, State, error) {
	fail := func(format string, args ...any) (map[*qslot][]*autograd.Tensor, map[*qslot]int, State, error) {
		return nil, nil, State{}, fmt.Errorf("%s: load: "+format, append([]any{a.kind}, args...)...)
	}
	for _, h := range append(a.hypers(), hyper{"step", 0}, hyper{"lr", 0}) {
		v, ok := s.Scalars[h.name]
		switch {
		case !ok:
			return fail("scalar %q is missing", h.name)
		case h.name == "step" || h.name == "lr":
			if _, isCount := count(v); (h.name == "step" && !isCount) || math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
				return fail("%s = %v is not valid", h.name, v)
			}
		case v != h.v:
			return fail("state has %s = %v, this optimizer %v; make the optimizer with the saved run's settings", h.name, v, h.v)
		}
	}
	rest := State{Tensors: map[string]*autograd.Tensor{}, Scalars: map[string]float64{}}
	for k, v := range s.Tensors {
		rest.Tensors[k] = v
	}
	for k, v := range s.Scalars {
		rest.Scalars[k] = v
	}
	delete(rest.Scalars, "quant_block")
	src, steps := map[*qslot][]*autograd.Tensor{}, map[*qslot]int{}
	for _, q := range a.quant {
		ts, err := a.quantTensors(q, s)
		if err != nil {
			return fail("%v", err)
		}
		stepName := "step." + q.name
		v, ok := s.Scalars[stepName]
		n, isCount := count(v)
		switch {
		case ts == nil && ok:
			return fail("scalar %q without tensors for %q", stepName, q.name)
		case ts == nil:
			continue
		case !ok || !isCount || n < 1:
			return fail("%s = %v (present %v), want a count ≥ 1", stepName, v, ok)
		}
		src[q], steps[q] = ts, n
		delete(rest.Scalars, stepName)
		for _, name := range a.qnames() {
			delete(rest.Tensors, name+"."+q.name)
		}
	}
	if a.small == nil {
		for k := range rest.Tensors {
			return fail("unknown tensor %q", k)
		}
	}
	return src, steps, rest, nil
}

// quantTensors returns q's four state tensors from s after checking their
// dtype and length, or nil when s has none of them.
func (a *Adam8bit) quantTensors(q *qslot, s State) ([]*autograd.Tensor, error) {
	n := q.t.Len()
	nb := (n + a.block - 1) / a.block
	want := []struct {
		dt  dtype.DType
		len int
	}{{dtype.I8, n}, {dtype.I8, n}, {dtype.F32, nb}, {dtype.F32, nb}, {dtype.F32, n}}
	names := a.qnames()
	var ts []*autograd.Tensor
	found := 0
	for i, name := range names {
		t := s.Tensors[name+"."+q.name]
		ts = append(ts, t)
		if t == nil {
			continue
		}
		found++
		if t.Released() || !t.IsContiguous() || t.DType() != want[i].dt || t.Len() != want[i].len {
			return nil, fmt.Errorf("tensor %q is %v %s, want %d contiguous %s elements", name+"."+q.name, t.Shape(), t.DType(), want[i].len, want[i].dt)
		}
	}
	switch found {
	case 0:
		return nil, nil
	case len(names):
		return ts, nil
	}
	return nil, fmt.Errorf("state of %q is incomplete (%d of %d tensors)", q.name, found, len(names))
}
