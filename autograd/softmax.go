package autograd

import (
	"slices"
)

// Softmax returns exp(x)/Σexp(x) along dim (negative counts from the end),
// computed stably (the maximum of each slice is subtracted first, sums in
// float64). x has any float dtype, which the result has; F16 and BF16 are
// computed in F32.
//
// Memory: the result (x's shape and dtype) is the only allocation that
// outlives the call, and it is the only tensor saved for backward (no new
// bytes). When dim is the last dimension the result is contiguous. For
// another dim the kernel runs on x viewed with dim moved last: the result
// is then a permuted view of a contiguous buffer (as if computed on
// x.Permute(…, dim).Contiguous()), and when that view of x is not dense
// the forward pass borrows a contiguous copy of it (x's bytes, tagged
// Workspace, freed before it returns). Backward allocates dx (x's shape,
// laid out like the result) and borrows dense copies of the gradient or
// the saved output when their permuted views are not dense.
func Softmax(x *Tensor, dim int) *Tensor { return softmax("softmax", x, dim, false) }

// LogSoftmax returns log(Softmax(x, dim)) computed directly as
// x - max - log Σexp(x - max), without forming the softmax. Memory as for
// Softmax: saves the result only.
func LogSoftmax(x *Tensor, dim int) *Tensor { return softmax("log_softmax", x, dim, true) }

func softmax(name string, x *Tensor, dim int, log bool) *Tensor {
	o := begin(name, x)
	cast, rel := o.castF32(x)
	defer rel()
	x = cast[0]
	if !x.dt.IsFloat() {
		fail(name, "input %v has dtype %s: want a float dtype", x.shape, x.dt)
	}
	if len(x.shape) == 0 {
		fail(name, "input of shape %v has no dimension %d", x.shape, dim)
	}
	r := len(x.shape)
	d := axis(name, dim, r)
	perm := lastPerm(d, r)
	cols := x.shape[d]
	rows := numel(x.shape) / max(cols, 1)
	if cols == 0 {
		rows = 0
	}

	xp := permuted(x, perm)
	defer xp.Release()
	outp := softmaxRows(o, xp, rows, cols, log)
	out := outp
	if d != r-1 {
		out = o.view(outp, outp.off, x.shape, unpermute(outp.strides, perm))
		outp.Release()
	}
	o.grad([]*Tensor{out}, []*Tensor{x}, []*Tensor{out}, func(c *bctx) []*Tensor {
		g, y := c.g[0], c.saved[0]
		bo := begin(name+"_backward", g, y)
		gp, yp := permuted(g, perm), permuted(y, perm)
		defer gp.Release()
		defer yp.Release()
		dxp := softmaxGradRows(bo, gp, yp, rows, cols, log)
		if d == r-1 {
			return []*Tensor{dxp}
		}
		dx := bo.view(dxp, dxp.off, g.shape, unpermute(dxp.strides, perm))
		dxp.Release()
		return []*Tensor{dx}
	})
	return out
}

// softmaxRows computes the softmax of the rows of xp (rows, cols) into a
// new tensor. Its workspace is freed even when an allocation fails.
func softmaxRows(o *op, xp *Tensor, rows, cols int, log bool) *Tensor {
	src, free := o.denseWork(xp)
	defer free()
	outp := o.empty(xp.dt, xp.shape)
	if k := o.k(); k != nil && rows > 0 {
		k.Softmax(outp.operand(), src.operand(), rows, cols, log)
	}
	return outp
}

// softmaxGradRows computes the softmax gradient of the rows of gp and yp
// into a new tensor; its workspace is freed even when an allocation fails.
func softmaxGradRows(bo *op, gp, yp *Tensor, rows, cols int, log bool) *Tensor {
	gd, fg := bo.denseWork(gp)
	defer fg()
	yd, fy := bo.denseWork(yp)
	defer fy()
	dxp := bo.empty(gp.dt, gp.shape)
	if k := bo.k(); k != nil && rows > 0 {
		k.SoftmaxGrad(dxp.operand(), gd.operand(), yd.operand(), rows, cols, log)
	}
	return dxp
}

// lastPerm returns the permutation of rank r that moves dimension d last.
func lastPerm(d, r int) []int {
	p := make([]int, 0, r)
	for i := range r {
		if i != d {
			p = append(p, i)
		}
	}
	return append(p, d)
}

// permuted returns an unrecorded handle on t with dimension perm[i] as
// dimension i; the caller releases it.
func permuted(t *Tensor, perm []int) *Tensor {
	shape, st := make([]int, len(perm)), make([]int, len(perm))
	for i, p := range perm {
		shape[i], st[i] = t.shape[p], t.strides[p]
	}
	return rawView(t, t.off, shape, st)
}

// unpermute returns the strides that undo permuted: dimension perm[i] of
// the result has stride st[i].
func unpermute(st, perm []int) []int {
	out := slices.Clone(st)
	for i, p := range perm {
		out[p] = st[i]
	}
	return out
}
