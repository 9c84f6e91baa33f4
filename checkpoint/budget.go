package checkpoint

import (
	"fmt"

	"github.com/headroom-ml/headroom/autograd"
	"github.com/headroom-ml/headroom/nn"
)

// Budget checkpoints a stack of layers so that the activations it holds
// stay under a byte budget, recomputing as few layers as it can.
//
// Its first step checkpoints every layer on its own — the cheapest way to
// run at all — and measures each layer: the bytes its ops save, its
// output, and (while backward recomputes it) the peak of its activations,
// transients included. From the next Forward on it runs the cheapest plan
// that its estimate puts under the budget: a plain
// (not recomputed) last segment as long as possible, and the layers before
// it cut into checkpointed segments whose recomputation fits. The budget
// covers what the layers hold: their input, what their ops save, their
// outputs. What the caller computes from the result comes on top.
//
// A step that fails (out of memory) after its measuring backward has
// recomputed every layer keeps the measurement, which does not depend on
// the step's values: its retry runs the plan — the same values as the
// measuring step would have computed, in fewer allocations.
type Budget struct {
	// Bytes is the activation budget.
	Bytes int64

	in, saved, out []int64  // per layer: input, saved and output bytes
	stats          []*Stats // per layer, from the measuring step
	starts         []int
	estimate       int64
	fits           bool
}

// NewBudget returns a Budget for n bytes of activations.
func NewBudget(n int64) *Budget { return &Budget{Bytes: n} }

// Forward runs layers on x under the budget (see Budget).
func (b *Budget) Forward(layers []nn.Layer, x *autograd.Tensor) *autograd.Tensor {
	if s := x.Scope(); s == nil || !s.GradEnabled() {
		return forward(layers, x)
	}
	if b.starts == nil && b.measured(len(layers)) {
		b.plan()
	}
	if b.starts != nil && len(b.saved) == len(layers) {
		return runSegments(layers, b.starts, x)
	}
	n := len(layers)
	b.in, b.saved, b.out = make([]int64, n), make([]int64, n), make([]int64, n)
	b.stats = make([]*Stats, n)
	h := x
	for i, l := range layers {
		b.in[i] = h.Bytes()
		b.stats[i] = &Stats{}
		outs := run(func(in []*autograd.Tensor) []*autograd.Tensor {
			return []*autograd.Tensor{l.Forward(in[0])}
		}, []*autograd.Tensor{h}, b.stats[i], nil)
		if h != x {
			h.Release()
		}
		h = outs[0]
	}
	return h
}

// measured reports whether a measuring step over n layers has completed
// (its backward recomputed every layer).
func (b *Budget) measured(n int) bool {
	if len(b.stats) != n {
		return false
	}
	for i, st := range b.stats {
		if st.RecomputePeak == 0 {
			return false
		}
		b.saved[i], b.out[i] = st.SavedBytes, st.OutBytes
	}
	return true
}

// Plan returns the first layer of each segment (the last runs plain), the
// estimated activation peak, and whether it fits the budget; nil before
// the first Forward.
func (b *Budget) Plan() (starts []int, estimate int64, fits bool) {
	return b.starts, b.estimate, b.fits
}

// LayerBytes returns, per layer, the bytes its forward saves for backward
// when not checkpointed (as measured by the first Forward).
func (b *Budget) LayerBytes() []int64 { return append([]int64(nil), b.saved...) }

// String describes the plan.
func (b *Budget) String() string {
	return fmt.Sprintf("checkpoint budget %d B: segments start at %v, estimated peak %d B, fits %v", b.Bytes, b.starts, b.estimate, b.fits)
}

// plan chooses the segments. keep[i] is the least sum of checkpointed
// segment inputs over segmentations of layers [0, i) whose every
// recomputation fits; the plain suffix [L, n) then costs keep[L] plus its
// own input and saved bytes at the end of the forward pass.
func (b *Budget) plan() {
	n := len(b.saved)
	const inf = int64(1) << 62
	keep, from := make([]int64, n+1), make([]int, n+1)
	for i := 1; i <= n; i++ {
		keep[i], from[i] = inf, -1
	}
	// Layer k holds r(k) = saved + output once it has run, and rises by
	// b.stats[k].RecomputePeak while it runs. A run of layers [i, j)
	// therefore peaks at peakRun(i, j) above what was there before.
	r := func(k int) int64 { return b.saved[k] + b.out[k] }
	peakRun := func(i, j int) int64 {
		var held, peak int64
		for k := i; k < j; k++ {
			peak = max(peak, held+b.stats[k].RecomputePeak)
			held += r(k)
		}
		return max(peak, held)
	}
	last := b.out[n-1]               // the caller holds the final output throughout
	peakOf := func(i, j int) int64 { // recomputing segment [i, j) after keep[i]
		return keep[i] + b.in[i] + peakRun(i, j) + last
	}
	for j := 1; j <= n; j++ {
		for i := 0; i < j; i++ {
			if keep[i] == inf {
				continue
			}
			if p := peakOf(i, j); p <= b.Bytes || j == i+1 {
				// A single layer is always allowed: nothing cuts finer.
				if c := keep[i] + b.in[i]; c < keep[j] {
					keep[j], from[j] = c, i
				}
			}
		}
	}
	bestL, bestEst := n, inf
	for L := 0; L <= n; L++ {
		if keep[L] == inf {
			continue
		}
		est := keep[L] + last
		if L < n {
			est = keep[L] + b.in[L] + peakRun(L, n)
		}
		for j := L; j > 0; j = from[j] {
			est = max(est, peakOf(from[j], j))
		}
		if est <= b.Bytes {
			bestL, bestEst = L, est
			break
		}
		if est < bestEst {
			bestL, bestEst = L, est
		}
	}
	var starts []int
	for j := bestL; j > 0; j = from[j] {
		starts = append([]int{from[j]}, starts...)
	}
	// Without a plain suffix (bestL == n) the last checkpointed segment
	// runs plain instead: the same activations, one recomputation fewer.
	if bestL < n || len(starts) == 0 {
		starts = append(starts, bestL)
	}
	b.starts, b.estimate, b.fits = starts, bestEst, bestEst <= b.Bytes
}
