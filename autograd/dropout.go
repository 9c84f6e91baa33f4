package autograd

// Dropout zeroes each element of x with probability p and scales the kept
// ones by 1/(1−p) (inverted dropout), any shape: out = x·mask/(1−p). With
// training false or p = 0 it is the identity and returns a new handle on x
// (gradients flow through unchanged). p must be in [0, 1); gen supplies the
// randomness in training and may be nil otherwise.
//
// The mask is drawn by Philox at positions [offset, offset+numel(x)) of
// gen's stream, element i (row-major) kept when its uniform draw is ≥ p; the
// op advances gen by numel(x) rounded up to a multiple of 4.
//
// Saves nothing: 0 bytes. Backward regenerates the mask from the (seed,
// offset) this forward used and applies the same kernel to the output
// gradient, so no mask is stored (PyTorch saves a 1-byte-per-element bool
// mask, numel(x) bytes). The output (x's shape and dtype) is the only
// allocation. Restoring gen's State and rerunning reproduces the mask
// exactly, which is what checkpoint recomputation relies on.
func Dropout(x *Tensor, p float64, gen *Generator, training bool) *Tensor {
	o := begin("dropout", x)
	if !(p >= 0 && p < 1) {
		fail("dropout", "probability %g for input %v: want 0 ≤ p < 1", p, x.shape)
	}
	if !x.dt.IsFloat() {
		fail("dropout", "input %v has dtype %s, want a float dtype", x.shape, x.dt)
	}
	if !training || p == 0 {
		return o.viewOp(x, x.off, x.shape, x.strides)
	}
	if gen == nil {
		fail("dropout", "nil generator for input %v in training", x.shape)
	}
	seed, offset := o.s.draw(gen, x.Len())
	out := o.empty(x.dt, x.shape)
	if k := o.k(); k != nil {
		k.Dropout(out.operand(), x.operand(), p, seed, offset)
	}
	o.grad([]*Tensor{out}, []*Tensor{x}, nil, func(c *bctx) []*Tensor {
		g := c.g[0]
		o := begin("dropout_backward", g)
		dx := o.empty(g.dt, g.shape)
		if k := o.k(); k != nil {
			k.Dropout(dx.operand(), g.operand(), p, seed, offset)
		}
		return []*Tensor{dx}
	})
	return out
}
