package optim

import (
	"fmt"
	"math"

	"github.com/headroom-ml/headroom/autograd"
	"github.com/headroom-ml/headroom/nn"
)

// ClipGradNorm scales the gradients of params (buffers and parameters
// without a gradient are skipped; a tensor listed twice counts once) so
// that their global L2 norm is at most maxNorm, as PyTorch's
// clip_grad_norm_ does: with total = √(Σ over every gradient element of
// g²) and c = maxNorm/(total + 1e-6), every gradient is multiplied by c
// when c < 1. It returns total, the norm before clipping.
//
// A non-finite total (a NaN or Inf gradient) is returned without error and
// nothing is scaled (PyTorch's error_if_nonfinite=False, except that
// PyTorch would multiply by the NaN coefficient).
//
// Memory: one F64 element per gradient on each gradient's device (tagged
// device.Workspace, freed before it returns); the squares are summed there
// and the per-gradient sums added on the host, in parameter order. On
// error (a bad maxNorm or gradient, or no memory for those elements) no
// gradient has changed.
func ClipGradNorm(params []nn.Param, maxNorm float64) (float64, error) {
	return clip(params, maxNorm, nil)
}

// ClipGradNormOf is ClipGradNorm over o's parameters. When o is Sharded
// the sum of squares is added up over the ranks (AllSum) before the root
// is taken, so every rank clips its part by the same global norm.
func ClipGradNormOf(o Optimizer, maxNorm float64) (float64, error) {
	var all func(float64) (float64, error)
	if sh, ok := o.(Sharded); ok {
		all = sh.AllSum
	}
	return clip(o.Params(), maxNorm, all)
}

// clip is ClipGradNorm with the sum of squares passed through all (when
// not nil) before the root is taken.
func clip(params []nn.Param, maxNorm float64, all func(float64) (float64, error)) (float64, error) {
	if math.IsNaN(maxNorm) || maxNorm < 0 {
		return 0, fmt.Errorf("clip_grad_norm: maxNorm %v, want ≥ 0", maxNorm)
	}
	var grads []*autograd.Tensor
	seen := map[*autograd.Tensor]bool{}
	for _, p := range params {
		if p.Buffer || p.T == nil || p.T.Released() || seen[p.T] {
			continue
		}
		seen[p.T] = true
		g := p.T.Grad()
		if g == nil {
			continue
		}
		if !g.DType().IsFloat() || !dense(g) {
			return 0, fmt.Errorf("clip_grad_norm: gradient of %q (%v %s) is not a contiguous float tensor", p.Name, g.Shape(), g.DType())
		}
		grads = append(grads, g)
	}
	var ss float64
	if len(grads) > 0 {
		sums, err := SumSquares("clip_grad_norm", grads, 1)
		if err != nil {
			return 0, err
		}
		for _, s := range sums {
			ss += s
		}
	}
	if all != nil {
		var err error
		if ss, err = all(ss); err != nil {
			return 0, fmt.Errorf("clip_grad_norm: %w", err)
		}
	}
	if len(grads) == 0 && all == nil {
		return 0, nil
	}
	total := math.Sqrt(ss)
	if math.IsNaN(total) || math.IsInf(total, 0) {
		return total, nil
	}
	if c := maxNorm / (total + 1e-6); c < 1 {
		for _, g := range grads {
			g.ScaleInPlace(c)
		}
	}
	return total, nil
}
