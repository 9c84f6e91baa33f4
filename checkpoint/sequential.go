package checkpoint

import (
	"math"

	"github.com/headroom-ml/headroom/autograd"
	"github.com/headroom-ml/headroom/nn"
)

// Sequential runs layers on x like nn.Sequential, cut into segments
// contiguous segments (≤ 0: ⌈√n⌉ for n layers, the choice that makes the
// activation memory O(√n)); every segment but the last is checkpointed.
// What stays alive through the forward pass is each checkpointed
// segment's input and the last segment's activations; backward recomputes
// one segment at a time.
func Sequential(layers []nn.Layer, segments int, x *autograd.Tensor) *autograd.Tensor {
	return runSegments(layers, cuts(len(layers), segments), x)
}

// cuts returns the starting layer of each of k segments of n layers, as
// equal in length as possible.
func cuts(n, k int) []int {
	if k <= 0 {
		k = int(math.Ceil(math.Sqrt(float64(n))))
	}
	k = max(1, min(k, n))
	starts := make([]int, k)
	for i := range starts {
		starts[i] = i * n / k
	}
	return starts
}

// runSegments runs the segments starting at starts, checkpointing all but
// the last.
func runSegments(layers []nn.Layer, starts []int, x *autograd.Tensor) *autograd.Tensor {
	h := x
	for i, lo := range starts {
		hi := len(layers)
		if i+1 < len(starts) {
			hi = starts[i+1]
		}
		seg := layers[lo:hi]
		var out *autograd.Tensor
		if i == len(starts)-1 {
			out = forward(seg, h)
		} else {
			out = Run(func(in []*autograd.Tensor) []*autograd.Tensor {
				return []*autograd.Tensor{forward(seg, in[0])}
			}, h)[0]
		}
		if h != x {
			h.Release()
		}
		h = out
	}
	return h
}

// forward runs layers in order, releasing intermediates (not x).
func forward(layers []nn.Layer, x *autograd.Tensor) *autograd.Tensor {
	h := x
	for _, l := range layers {
		n := l.Forward(h)
		if h != x {
			h.Release()
		}
		h = n
	}
	return h
}
