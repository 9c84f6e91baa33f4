package autograd

import (
	"github.com/headroom-ml/headroom/device"
	"github.com/headroom-ml/headroom/dtype"
)

// LayerNorm normalises x (…, C) over its last dimension:
// y = (x - mean)/√(var + eps)·w + b with each row's mean and biased
// variance; w and b have shape (C) and may be nil (weight 1, bias 0). y has
// x's dtype; w and b have it too, except under autocast, where they may
// have another float dtype (an F32 weight with a BF16 input), F64 only
// with F64; F16 and BF16 are computed in F32.
//
// Memory, with rows = numel(x)/C: y (x's shape and dtype), and the per-row
// mean and rstd = 1/√(var + eps), (rows) each in the compute dtype (F32, or
// F64 for an F64 x): 2·rows·4 bytes for F32, F16 and BF16 inputs
// (2·rows·8 for F64), tagged Activation. Saves x (already alive), w when x
// needs a gradient, and mean and rstd. Without a recorded graph the
// statistics are workspace, freed before it returns. A strided x borrows a
// contiguous copy (x's bytes, Workspace) in forward and again in backward.
// Backward allocates dx, dw and db as needed (dw and db summed over rows).
func LayerNorm(x, w, b *Tensor, eps float64) *Tensor {
	const name = "layer_norm"
	o := begin(name, x, w, b)
	if len(x.shape) == 0 {
		fail(name, "input %v %s: want a float tensor with at least one dimension", x.shape, x.dt)
	}
	c := x.shape[len(x.shape)-1]
	o.normOperands(x, c, []operand{{"weight", w}, {"bias", b}}, nil)
	if c == 0 {
		fail(name, "input %v: the normalised (last) dimension is empty", x.shape)
	}
	rows := numel(x.shape) / c
	if eps < 0 {
		fail(name, "eps %g: want eps ≥ 0", eps)
	}
	rec := o.records()
	sdt := computeDType(x.dt)
	stat := o.scratch
	if rec {
		stat = o.empty
	}
	xd, fx := o.denseWork(x)
	y := o.empty(x.dt, x.shape)
	mean, rstd := stat(sdt, []int{rows}), stat(sdt, []int{rows})
	if k := o.k(); k != nil && rows > 0 {
		k.LayerNorm(y.operand(), mean.operand(), rstd.operand(), xd.operand(), optOperand(w), optOperand(b), rows, c, eps)
	}
	fx()
	if !rec {
		mean.Release()
		rstd.Release()
		return y
	}
	xs, dt, wdt, bdt := x.shape, x.dt, dtypeOr(w, x.dt), dtypeOr(b, x.dt)
	o.grad([]*Tensor{y}, []*Tensor{x, w, b}, []*Tensor{x, pick(x.requiresGrad, w), mean, rstd}, func(bc *bctx) []*Tensor {
		g, xv, wv, mv, rv := bc.g[0], bc.saved[0], bc.saved[1], bc.saved[2], bc.saved[3]
		bo := begin(name+"_backward", g, xv, wv, mv, rv)
		gd, fg := bo.denseWork(g)
		xd, fx := bo.denseWork(xv)
		res := make([]*Tensor, 3)
		if bc.need[0] {
			res[0] = bo.empty(dt, xs)
		}
		if bc.need[1] {
			res[1] = bo.empty(wdt, []int{c})
		}
		if bc.need[2] {
			res[2] = bo.empty(bdt, []int{c})
		}
		if k := bo.k(); k != nil {
			k.LayerNormGrad(optOperand(res[0]), optOperand(res[1]), optOperand(res[2]), gd.operand(), xd.operand(), optOperand(wv), mv.operand(), rv.operand(), rows, c)
		}
		fg()
		fx()
		return res
	})
	mean.Release()
	rstd.Release()
	return y
}

// BatchNorm2d normalises x (N, C, H, W) per channel (any rank ≥ 2 works:
// (N, C) is HW = 1, (N, C, L) is HW = L): y = (x - mean)/√(var + eps)·w + b
// with w, b (C) optional (nil: weight 1, bias 0). y has x's dtype, and so
// have w and b except under autocast (as for LayerNorm); the running
// statistics may have another float dtype (F64 only with F64); F16 and
// BF16 are computed in F32.
//
// In training (PyTorch's semantics) mean and the biased variance are the
// batch's, over the N·H·W values of each channel (more than one needed),
// and runMean and runVar (C), when not nil, are updated in place with the
// unbiased variance: run = (1-momentum)·run + momentum·stat (momentum 0.1
// is usual). They are free-standing buffers, not differentiated (they must
// not require grad); their block versions are bumped. In eval runMean and
// runVar (both required) are the statistics and are not changed. While
// its scope recomputes a checkpointed forward (Scope.Recompute), training
// uses the batch statistics but leaves the running ones alone: the
// original forward updated them once already.
//
// Memory: y (x's shape and dtype), and the per-channel mean and invstd =
// 1/√(var + eps) used, (C) each in the compute dtype (F32, or F64 for an
// F64 x): 2·C·4 bytes for F32, F16 and BF16 inputs (2·C·8 for F64), tagged
// Activation (workspace, freed before it returns, without a recorded
// graph). Saves x (already alive; in eval only when w needs a gradient),
// w when x needs a gradient, and mean and invstd. A strided x borrows a
// contiguous copy (Workspace) in forward and in backward. Backward
// computes the full gradient through the batch statistics in training
// and the affine one (dx = dy·w·invstd) in eval, allocating dx, dw and db
// as needed.
func BatchNorm2d(x, w, b, runMean, runVar *Tensor, training bool, momentum, eps float64) *Tensor {
	return batchNorm2d("batch_norm", x, w, b, runMean, runVar, training, false, momentum, eps)
}

// BatchNormReLU2d is BatchNorm2d followed by ReLU, as a network's
// conv → BN → ReLU uses them, in one op and one pass over x (the device's
// BatchNormRelu), in training and in inference: one activation allocated,
// not two, and y the same bits as BatchNorm2d then ReLU. Saves what
// BatchNorm2d saves and y (the ReLU's mask, as ReLU saves its output; y
// is what the next layer saves anyway). Backward masks the gradient by
// y > 0 into a workspace of the gradient's size (what ReLU's backward
// allocates as its dx), then runs BatchNorm2d's backward on it.
func BatchNormReLU2d(x, w, b, runMean, runVar *Tensor, training bool, momentum, eps float64) *Tensor {
	return batchNorm2d("batch_norm_relu", x, w, b, runMean, runVar, training, true, momentum, eps)
}

// batchNorm2d is BatchNorm2d, and with relu BatchNormReLU2d, under the
// op name name.
func batchNorm2d(name string, x, w, b, runMean, runVar *Tensor, training, relu bool, momentum, eps float64) *Tensor {
	o := begin(name, x, w, b, runMean, runVar)
	if len(x.shape) < 2 {
		fail(name, "input %v %s: want a float tensor (N, C, H, W) or (N, C)", x.shape, x.dt)
	}
	n, c := x.shape[0], x.shape[1]
	hw := numel(x.shape[2:])
	o.normOperands(x, c, []operand{{"weight", w}, {"bias", b}}, []operand{{"running mean", runMean}, {"running var", runVar}})
	for _, t := range []*Tensor{runMean, runVar} {
		if t != nil && t.requiresGrad {
			fail(name, "running statistics %v require grad: they are buffers, not parameters", t.shape)
		}
	}
	switch {
	case !training && (runMean == nil || runVar == nil):
		fail(name, "input %v in eval mode needs running mean and running var, got nil", x.shape)
	case training && n*hw <= 1 && c > 0:
		fail(name, "input %v in training: want more than 1 value per channel", x.shape)
	case eps < 0 || momentum < 0 || momentum > 1:
		fail(name, "momentum %g and eps %g: want 0 ≤ momentum ≤ 1 and eps ≥ 0", momentum, eps)
	}
	rec := o.records()
	sdt := computeDType(x.dt)
	stat := o.scratch
	if rec {
		stat = o.empty
	}
	if training && o.s.Recomputing() {
		// The original forward updated the running statistics already.
		runMean, runVar = nil, nil
	}
	xd, fx := o.denseWork(x)
	y := o.empty(x.dt, x.shape)
	mean, invstd := stat(sdt, []int{c}), stat(sdt, []int{c})
	if k := o.k(); k != nil && n*c*hw > 0 {
		bn := k.BatchNorm
		if relu {
			bn = k.BatchNormRelu
		}
		bn(y.operand(), mean.operand(), invstd.operand(), xd.operand(), optOperand(w), optOperand(b),
			optOperand(runMean), optOperand(runVar), n, c, hw, training, momentum, eps)
	}
	fx()
	if training {
		for _, t := range []*Tensor{runMean, runVar} {
			if t != nil {
				t.blk.Bump()
			}
		}
	}
	if !rec {
		mean.Release()
		invstd.Release()
		return y
	}
	xs, dt, wdt, bdt := x.shape, x.dt, dtypeOr(w, x.dt), dtypeOr(b, x.dt)
	wGrad := w != nil && w.requiresGrad
	save := []*Tensor{pick(training || wGrad, x), pick(x.requiresGrad, w), mean, invstd, pick(relu, y)}
	o.grad([]*Tensor{y}, []*Tensor{x, w, b}, save, func(bc *bctx) []*Tensor {
		g, xv, wv, mv, iv := bc.g[0], bc.saved[0], bc.saved[1], bc.saved[2], bc.saved[3]
		bo := begin(name+"_backward", g, xv, wv, mv, iv, bc.saved[4])
		gd, fg := bo.denseWork(g)
		if relu {
			gd, fg = bo.reluMask(gd, fg, bc.saved[4])
		}
		xd, fx := xv, func() {}
		if xv != nil {
			xd, fx = bo.denseWork(xv)
		}
		res := make([]*Tensor, 3)
		if bc.need[0] {
			res[0] = bo.empty(dt, xs)
		}
		if bc.need[1] {
			res[1] = bo.empty(wdt, []int{c})
		}
		if bc.need[2] {
			res[2] = bo.empty(bdt, []int{c})
		}
		if k := bo.k(); k != nil && n*c*hw > 0 {
			k.BatchNormGrad(optOperand(res[0]), optOperand(res[1]), optOperand(res[2]), gd.operand(), optOperand(xd), optOperand(wv), mv.operand(), iv.operand(), n, c, hw, training)
		} else if k != nil {
			for _, t := range res[1:] {
				if t != nil {
					k.Fill(t.operand(), 0)
				}
			}
		}
		fg()
		fx()
		return res
	})
	mean.Release()
	invstd.Release()
	return y
}

// reluMask returns g·(y > 0), ReLU's gradient through its output y, in a
// workspace of g's size, releasing g's dense copy (release) first
// when it had one; and the function that releases the mask.
func (o *op) reluMask(g *Tensor, release func(), y *Tensor) (*Tensor, func()) {
	m := o.empty(g.dt, g.shape)
	yd, fy := dense(y)
	if k := o.k(); k != nil {
		k.UnaryGrad(device.Relu, m.operand(), g.operand(), device.Operand{}, yd.operand(), 0)
	}
	fy()
	release()
	return m, m.Release
}

// normOperands checks a normalisation's per-channel operands (nil ones
// skipped): all of shape (c). The affine ones (weight, bias) have x's
// dtype, or — where floats may mix (under autocast: an F32 weight with a
// BF16 activation) — another float dtype the kernel takes; the running
// statistics may always have another float dtype. The kernels take any
// float dtypes (computed in F32) except F64 with another.
func (o *op) normOperands(x *Tensor, c int, affine, stats []operand) {
	in := operand{"input", x}
	o.oneDType(true, append([]operand{in}, affine...)...)
	for _, p := range append(append([]operand(nil), affine...), stats...) {
		if p.t != nil && (len(p.t.shape) != 1 || p.t.shape[0] != c) {
			fail(o.name, "input %v and %s %v: want %s (%d)", x.shape, p.what, p.t.shape, p.what, c)
		}
	}
	kernelTakes := func(p dtype.DType) bool { return p.IsFloat() && (x.dt == dtype.F64) == (p == dtype.F64) }
	for _, p := range affine {
		if p.t != nil && !kernelTakes(p.t.dt) {
			o.mismatch(in, p)
		}
	}
	for _, p := range stats {
		if p.t != nil && !kernelTakes(p.t.dt) {
			fail(o.name, "input %v %s and %s %v %s: want the statistics in a float dtype (f64 only with f64)", x.shape, x.dt, p.what, p.t.shape, p.t.dt)
		}
	}
}

// dtypeOr returns t's dtype, or d when t is nil.
func dtypeOr(t *Tensor, d dtype.DType) dtype.DType {
	if t == nil {
		return d
	}
	return t.dt
}
