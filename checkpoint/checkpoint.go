package checkpoint

import (
	"fmt"

	"github.com/headroom-ml/headroom/autograd"
	"github.com/headroom-ml/headroom/device"
	"github.com/headroom-ml/headroom/dtype"
)

// Func is a checkpointable function: it maps input tensors to output
// tensors, may read parameters and generators, and must release its own
// intermediates (it must not release its inputs).
type Func func(ins []*autograd.Tensor) []*autograd.Tensor

// savedMeta describes one tensor an op saved for backward.
type savedMeta struct {
	shape []int
	dt    dtype.DType
	bytes int64
	blk   *device.Block
}

// Stats describes one checkpointed call: what its forward would have kept
// for backward without checkpointing.
type Stats struct {
	Saved int // tensors saved by the function's ops
	// SavedBytes is the bytes of the distinct activation blocks they hold,
	// the function's inputs and parameters excluded.
	SavedBytes int64
	OutBytes   int64 // bytes of the outputs
	// KeptBytes is the bytes of the distinct activation blocks a Selective
	// forward kept for backward (0 for Run).
	KeptBytes int64
	// RecomputePeak is how far the activation bytes rose while backward
	// recomputed the function: everything it saves, its outputs, and the
	// transients in between. 0 until backward has run.
	RecomputePeak int64
}

// Run computes fn(ins) keeping only ins (and the outputs) for backward;
// backward recomputes fn and differentiates through the recomputation.
// The outputs belong to the inputs' scope. When that scope records no
// graph, Run just calls fn.
func Run(fn Func, ins ...*autograd.Tensor) []*autograd.Tensor {
	return run(fn, ins, nil, nil)
}

func scopeOf(ts []*autograd.Tensor) *autograd.Scope {
	for _, t := range ts {
		if s := t.Scope(); s != nil {
			return s
		}
	}
	return nil
}

// run checkpoints fn; when st is not nil it receives what the forward
// measured, and RecomputePeak when backward recomputes.
// pol, when not nil, says which saved tensors the forward keeps (see
// Selective).
func run(fn Func, ins []*autograd.Tensor, st *Stats, pol *Policy) []*autograd.Tensor {
	s := scopeOf(ins)
	if s == nil || !s.GradEnabled() {
		return fn(ins)
	}
	if st == nil {
		st = &Stats{}
	}
	// Forward: run fn in a child scope with grad recording on, to learn
	// exactly what its ops would save (shapes and dtypes only: the hook
	// drops each tensor at once), and the random draws it makes.
	child := s.Child()
	defer child.Release() // also when fn or Record panics (out of memory)
	var want []savedMeta
	var kept keptSet
	var log *autograd.OutputLog
	done := false
	defer func() { // fn or Record panicked (out of memory): give back what was kept
		if !done {
			kept.abandon(log)
		}
	}()
	child.PushSavedHooks(autograd.SavedHooks{
		Pack: func(t *autograd.Tensor) any {
			want = append(want, metaOf(t))
			if !kept.offer(pol, len(want)-1, t, ins) {
				t.Release()
			}
			return nil
		},
		Unpack: func(any) *autograd.Tensor { panic("checkpoint: unpack of a dropped tensor") },
	})
	cast := s.AutocastDType()
	stopLog := child.LogRNG()
	leaves := leavesOf(child, ins)
	log = kept.startLog(child, pol)
	outs := fn(leaves)
	kept.stopLog(child, log)
	draws := stopLog()
	needGrad := false
	adopted := make([]*autograd.Tensor, len(outs))
	for i, o := range outs {
		needGrad = needGrad || o.RequiresGrad()
		adopted[i] = s.Adopt(o)
		st.OutBytes += o.Bytes()
	}
	touched := child.Leaves() // the parameters recomputation will send gradients to
	seen := map[*device.Block]bool{}
	for _, t := range ins {
		seen[t.Block()] = true
	}
	for _, m := range want {
		st.Saved++
		if !seen[m.blk] && m.blk.Label().Tag == device.Activation {
			seen[m.blk] = true
			st.SavedBytes += m.blk.Len()
		}
	}
	st.KeptBytes = kept.bytes()

	shapes := make([][]int, len(adopted))
	for i, a := range adopted {
		shapes[i] = a.Shape()
	}
	autograd.Record(autograd.Custom{
		Name: "checkpoint", Outs: adopted, Ins: ins, Saved: append(append(append([]*autograd.Tensor(nil), ins...), kept.ts...), kept.outs...),
		RequiresGrad: needGrad, Leaves: touched,
		Backward: func(grads, saved []*autograd.Tensor, need []bool) []*autograd.Tensor {
			nk := len(ins) + len(kept.ts)
			ks := keptSet{at: kept.at, ts: saved[len(ins):nk], ops: kept.ops, outAt: kept.outAt, calls: kept.calls, outs: saved[nk:]}
			return recompute(s, fn, cast, draws, want, shapes, grads, saved[:len(ins)], need, st, ks)
		},
	})
	kept.release() // the graph node holds its own handles
	done = true
	return adopted
}

// recompute reruns fn on the saved inputs as the forward did and
// differentiates through it.
func recompute(s *autograd.Scope, fn Func, cast dtype.DType, draws []autograd.RNGDraw, want []savedMeta,
	shapes [][]int, grads, saved []*autograd.Tensor, need []bool, st *Stats, kept keptSet) []*autograd.Tensor {
	child := s.Child()
	defer child.Release()
	var got []savedMeta
	child.PushSavedHooks(autograd.SavedHooks{
		Pack: func(t *autograd.Tensor) any {
			got = append(got, metaOf(t))
			return kept.substitute(len(got)-1, t)
		},
		Unpack: func(p any) *autograd.Tensor { return p.(*autograd.Tensor).Detach() },
		Free:   func(p any) { kept.free(p.(*autograd.Tensor)) },
	})
	leaves := leavesOf(child, saved)
	kept.replay(child)
	var outs []*autograd.Tensor
	old := child.SetAutocast(cast)
	stop := child.ReplayRNG(draws)
	probe := saved[0].Device().Probe()
	func() {
		defer probe.Stop() // a recomputation out of memory must not leave the probe watching
		child.Recompute(func() { outs = fn(leaves) })
	}()
	st.RecomputePeak = probe.Rise(device.Activation)
	child.SetOutputLog(nil) // backward's own products compute
	stop()
	child.SetAutocast(old)
	if err := same(want, got, shapes, outs); err != nil {
		panic(&autograd.Error{Op: "checkpoint", Msg: err.Error()})
	}
	var roots, seeds []*autograd.Tensor
	for i, g := range grads {
		if g != nil && outs[i].RequiresGrad() {
			roots = append(roots, outs[i])
			seeds = append(seeds, g)
		}
	}
	if err := autograd.BackwardAll(roots, seeds); err != nil {
		panic(err)
	}
	res := make([]*autograd.Tensor, len(saved))
	for i, l := range leaves {
		if need[i] {
			res[i] = l.TakeGrad()
		}
	}
	return res
}

func leavesOf(s *autograd.Scope, ins []*autograd.Tensor) []*autograd.Tensor {
	ls := make([]*autograd.Tensor, len(ins))
	for i, t := range ins {
		ls[i] = s.LeafOf(t)
	}
	return ls
}

func metaOf(t *autograd.Tensor) savedMeta {
	return savedMeta{shape: t.Shape(), dt: t.DType(), bytes: t.Bytes(), blk: t.Block()}
}

// same checks that the recomputation saved what the forward did and made
// outputs of the same shapes.
func same(want, got []savedMeta, shapes [][]int, outs []*autograd.Tensor) error {
	if len(outs) != len(shapes) {
		return fmt.Errorf("recomputation returned %d outputs, the forward %d: the function is not deterministic", len(outs), len(shapes))
	}
	for i, o := range outs {
		if fmt.Sprint(o.Shape()) != fmt.Sprint(shapes[i]) {
			return fmt.Errorf("recomputed output %d has shape %v, the forward's %v", i, o.Shape(), shapes[i])
		}
	}
	if len(want) != len(got) {
		return fmt.Errorf("recomputation saved %d tensors for backward, the forward %d: the function is not deterministic (does it depend on state that changed, such as a mode or a flag?)", len(got), len(want))
	}
	for i := range want {
		if fmt.Sprint(want[i].shape) != fmt.Sprint(got[i].shape) || want[i].dt != got[i].dt {
			return fmt.Errorf("recomputation saved tensor %d as %v %s, the forward as %v %s", i, got[i].shape, got[i].dt, want[i].shape, want[i].dt)
		}
	}
	return nil
}
