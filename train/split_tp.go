package train

import (
	"math"

	"github.com/headroom-ml/headroom/autograd"
	"github.com/headroom-ml/headroom/optim"
	"github.com/headroom-ml/headroom/parallel"
)

// inf is a clip that never clips (the norm is still computed).
var inf = math.Inf(1)

// tensorOptimizer is a tensor-parallel rank's optimizer as an
// optim.Sharded: its AllSum adds the ranks' sums of squares of their
// split parameters' gradients and counts the whole (replicated)
// parameters' once — their gradients are the same on every rank — so
// that every rank clips by the unsplit model's gradient norm.
type tensorOptimizer struct {
	optim.Optimizer
	comm  parallel.Communicator
	whole []*autograd.Tensor // the parameters every rank holds whole
}

// wholeGrads returns the parameters of g that every rank holds whole: the
// position table, the LayerNorms and the row-parallel layers' biases.
func wholeGrads(g *parallel.TensorGPT) []*autograd.Tensor {
	ts := []*autograd.Tensor{g.Wpe.Weight, g.LNF.Weight, g.LNF.Bias}
	for _, k := range g.Blocks {
		ts = append(ts, k.LN1.Weight, k.LN1.Bias, k.LN2.Weight, k.LN2.Bias, k.Proj.Bias, k.Out.Bias)
	}
	var out []*autograd.Tensor
	for _, t := range ts {
		if t != nil {
			out = append(out, t)
		}
	}
	return out
}

// AllSum returns Σ over the ranks of (v − w) + w, where w is this rank's
// sum of squares of the whole parameters' gradients (an F64 all-reduce of
// 8 bytes, tag communication, on every rank at the same point).
func (o *tensorOptimizer) AllSum(v float64) (float64, error) {
	var grads []*autograd.Tensor
	for _, t := range o.whole {
		if g := t.Grad(); g != nil {
			grads = append(grads, g)
		}
	}
	var w float64
	if len(grads) > 0 {
		sums, err := optim.SumSquares("clip_grad_norm", grads, 1)
		if err != nil {
			return 0, err
		}
		for _, s := range sums {
			w += s
		}
	}
	sum, err := parallel.AllSumFloat64(o.comm, o.whole[0].Device(), v-w)
	return sum + w, err
}
