package prune

import (
	"fmt"
	"slices"

	"github.com/headroom-ml/headroom/autograd"
	"github.com/headroom-ml/headroom/device"
)

// cut is one tensor field to be replaced by a smaller copy keeping, along
// each listed dimension, the given indices.
type cut struct {
	dst  **autograd.Tensor
	keep map[int][]int // dimension → indices kept, ascending
}

// plan collects every change pruning makes to a model, so that all new
// tensors are made before anything changes: either all of them exist and
// the model is switched over, or the model is left as it was.
type plan struct {
	cuts   []*cut
	byDst  map[**autograd.Tensor]*cut
	sizes  []func() // size-field updates, run on commit
	layers []LayerReport
}

func newPlan() *plan { return &plan{byDst: map[**autograd.Tensor]*cut{}} }

// keep records that *dst keeps only the indices keep along dim. A nil
// tensor (a layer without bias) is skipped. Cuts of one tensor along
// several dimensions combine.
func (p *plan) keep(dst **autograd.Tensor, dim int, keep []int) {
	if *dst == nil {
		return
	}
	c := p.byDst[dst]
	if c == nil {
		c = &cut{dst: dst, keep: map[int][]int{}}
		p.byDst[dst] = c
		p.cuts = append(p.cuts, c)
	}
	c.keep[dim] = keep
}

// size records a size-field update to run when the plan is applied.
func (p *plan) size(f func()) { p.sizes = append(p.sizes, f) }

// apply makes every new tensor, then replaces the old ones (releasing them
// and their gradients) and updates the size fields. If a tensor cannot be
// made (out of memory), it releases those it made and returns the error:
// the model is unchanged. While it runs, old and new tensors are both
// allocated: the parameter peak is the model's bytes before plus after.
func (p *plan) apply() error {
	made := make([]*autograd.Tensor, len(p.cuts))
	err := autograd.Try(func() {
		for i, c := range p.cuts {
			made[i] = gather(*c.dst, c.keep)
		}
	})
	if err != nil {
		for _, t := range made {
			if t != nil {
				t.Release()
			}
		}
		return err
	}
	for i, c := range p.cuts {
		(*c.dst).Release()
		*c.dst = made[i]
	}
	for _, f := range p.sizes {
		f()
	}
	return nil
}

// gather returns a new tensor like t (name, dtype, device, tag Parameter,
// whether it requires grad) holding t's elements at the kept indices of
// each dimension in keep. The copy runs on t's device (index selects on a
// detached view, into temporaries tagged Other, then one copy into the new
// tensor): nothing goes through the host.
func gather(t *autograd.Tensor, keep map[int][]int) *autograd.Tensor {
	shape := t.Shape()
	dims := make([]int, 0, len(keep))
	for d := range keep {
		dims = append(dims, d)
	}
	slices.Sort(dims)
	for _, d := range dims {
		shape[d] = len(keep[d])
	}
	var out *autograd.Tensor
	if t.RequiresGrad() {
		out = autograd.Param(t.Device(), t.DType(), t.Name(), shape...)
	} else {
		out = autograd.New(t.Device(), t.DType(), device.Parameter, shape...).SetName(t.Name())
	}
	cur := t.Detach()
	var idx *autograd.Tensor
	defer func() {
		cur.Release()
		if idx != nil {
			idx.Release()
		}
		if r := recover(); r != nil {
			out.Release()
			panic(r)
		}
	}()
	for _, d := range dims {
		ks := make([]int64, len(keep[d]))
		for i, k := range keep[d] {
			ks[i] = int64(k)
		}
		idx = autograd.FromInt64s(t.Device(), []int{len(ks)}, ks)
		next := autograd.IndexSelect(cur, d, idx)
		idx.Release()
		idx = nil
		cur.Release()
		cur = next
	}
	out.CopyFrom(cur)
	return out
}

// checkSame returns an error unless every size equals want.
func checkSame(what string, want int, sizes ...int) error {
	for _, s := range sizes {
		if s != want {
			return fmt.Errorf("%s: sizes %v: want all %d", what, sizes, want)
		}
	}
	return nil
}
