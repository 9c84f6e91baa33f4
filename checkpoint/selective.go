package checkpoint

import (
	"github.com/headroom-ml/headroom/autograd"
	"github.com/headroom-ml/headroom/device"
	"github.com/headroom-ml/headroom/nn"
)

// Selective computes fn(ins) keeping for backward only ins and the outputs
// that pol keeps (nil: DefaultPolicy): those of matrix products,
// convolutions and attention. Backward reruns fn as Run does (same
// autocast dtype, same random draws), handing the kept outputs back to
// their calls instead of computing them and using kept saved tensors in
// place of their recomputed twins, which it frees at once, so gradients
// are bit-identical to plain autograd. The forward holds ins, the kept
// tensors and the outputs; backward adds fn's recomputed transients.
func Selective(pol *Policy, fn Func, ins ...*autograd.Tensor) []*autograd.Tensor {
	if pol == nil {
		pol = DefaultPolicy()
	}
	return run(fn, ins, nil, pol)
}

// keptSet is what a Selective forward kept: ts[i] is the tensor saved at
// position at[i] in the order the region's ops saved them; outs[i] is the
// output of call outAt[i] (of calls) of the ops in ops that autograd
// logged, kept unless written in place (under savedOnly only when it is
// one of ts), so that recomputation skips that call's arithmetic.
type keptSet struct {
	at    []int
	ts    []*autograd.Tensor
	ops   map[string]bool
	outAt []int
	calls int
	outs  []*autograd.Tensor
	// savedOnly is the policy's SavedOnly: keep a logged output only
	// when it is one of ts.
	savedOnly bool
}

// startLog makes child log the outputs of the policy's ops (nil without a
// policy).
func (k *keptSet) startLog(child *autograd.Scope, pol *Policy) *autograd.OutputLog {
	if pol == nil {
		return nil
	}
	k.ops, k.savedOnly = pol.Save, pol.SavedOnly
	log := autograd.NewOutputLog(pol.Save)
	child.SetOutputLog(log)
	return log
}

// stopLog ends the log and keeps the logged outputs that were not written
// in place afterwards — under SavedOnly only those that are kept saved
// tensors anyway (they cost nothing more); it releases the others.
func (k *keptSet) stopLog(child *autograd.Scope, log *autograd.OutputLog) {
	if log == nil {
		return
	}
	child.SetOutputLog(nil)
	blocks := map[*device.Block]bool{}
	for _, t := range k.ts {
		blocks[t.Block()] = true
	}
	all := log.Outputs()
	k.calls = len(all)
	for i, t := range all {
		if (!k.savedOnly || blocks[t.Block()]) && !log.Modified(i) {
			k.outAt = append(k.outAt, i)
			k.outs = append(k.outs, t)
		} else {
			t.Release()
		}
	}
}

// replay makes child's recomputation reuse the kept outputs.
func (k keptSet) replay(child *autograd.Scope) {
	if k.ops == nil {
		return
	}
	outs := make([]*autograd.Tensor, k.calls)
	for i, at := range k.outAt {
		outs[at] = k.outs[i]
	}
	child.SetOutputLog(autograd.ReplayLog(k.ops, outs))
}

// offer keeps t, saved at position i, when pol keeps it and it is not the
// storage of one of the region's inputs (those are kept anyway).
func (k *keptSet) offer(pol *Policy, i int, t *autograd.Tensor, ins []*autograd.Tensor) bool {
	if !pol.keeps(t.Block().Label()) {
		return false
	}
	for _, in := range ins {
		if in.Block() == t.Block() {
			return false
		}
	}
	k.at = append(k.at, i)
	k.ts = append(k.ts, t)
	return true
}

// bytes is the storage the kept tensors and outputs hold, each block
// counted once.
func (k *keptSet) bytes() int64 {
	var n int64
	seen := map[*device.Block]bool{}
	for _, ts := range [][]*autograd.Tensor{k.ts, k.outs} {
		for _, t := range ts {
			if !seen[t.Block()] {
				seen[t.Block()] = true
				n += t.Block().Len()
			}
		}
	}
	return n
}

// release gives back the forward's handles on the kept tensors.
func (k *keptSet) release() {
	for _, t := range k.ts {
		t.Release()
	}
	for _, t := range k.outs {
		t.Release()
	}
}

// abandon releases the handles a forward that failed midway holds: the
// kept tensors and every output log recorded (Release is idempotent).
func (k *keptSet) abandon(log *autograd.OutputLog) {
	if log != nil {
		for _, t := range log.Outputs() {
			t.Release()
		}
	}
	k.release()
}

// substitute returns what the recomputation saves at position i: the kept
// tensor (freeing the recomputed twin t) when there is one, else t.
func (k keptSet) substitute(i int, t *autograd.Tensor) *autograd.Tensor {
	for j, at := range k.at {
		if at == i {
			t.Release()
			return k.ts[j]
		}
	}
	return t
}

// free releases a tensor the recomputation saved, unless it is a kept one
// (the checkpoint node owns those).
func (k keptSet) free(t *autograd.Tensor) {
	for _, kt := range k.ts {
		if kt == t {
			return
		}
	}
	t.Release()
}

// SelectiveEach runs every layer of a stack in its own Selective region
// under pol (nil: DefaultPolicy) and returns the last output: a stack's
// activations fall to its inputs, outputs and kept tensors.
func SelectiveEach(layers []nn.Layer, pol *Policy, x *autograd.Tensor) *autograd.Tensor {
	h := x
	for _, l := range layers {
		out := Selective(pol, func(in []*autograd.Tensor) []*autograd.Tensor {
			return []*autograd.Tensor{l.Forward(in[0])}
		}, h)[0]
		if h != x {
			h.Release()
		}
		h = out
	}
	return h
}
