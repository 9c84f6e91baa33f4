package autograd

import (
	"fmt"
	"slices"

	"github.com/headroom-ml/headroom/dtype"
)

// Indices are I64 or I32 tensors. When the device computes, an op reads
// them on the host (an explicit copy, which on an asynchronous device
// synchronises) and fails with *Error on one outside its dimension; on meta
// no values exist and the check is skipped.

// IndexSelect returns the slices of x at positions idx along dim
// (torch.index_select): x (…, N, …) and idx (M) of I64 or I32 values in
// [0, N) give (…, M, …) in x's dtype; indices may repeat. The gradient
// scatters back with IndexAdd into a dense zero tensor of x's shape, so
// repeated indices accumulate.
//
// Saves idx only (M integers, already alive); the output is the only
// allocation. A non-contiguous x or idx is read through a contiguous
// workspace copy freed before returning.
func IndexSelect(x *Tensor, dim int, idx *Tensor) *Tensor {
	const name = "index_select"
	o := begin(name, x, idx)
	d := axis(name, dim, len(x.shape))
	indexDType(name, idx, x.shape)
	if len(idx.shape) != 1 {
		fail(name, "indices %v for input %v: want 1-D indices (M)", idx.shape, x.shape)
	}
	outer, n, inner := numel(x.shape[:d]), x.shape[d], numel(x.shape[d+1:])
	shape := slices.Clone(x.shape)
	shape[d] = idx.shape[0]
	return indexSelect(o, name, x, idx, shape, outer, n, inner, fmt.Sprintf("dimension %d", d))
}

// Embedding returns the rows of weight (V, C) at the integer indices idx,
// of any shape, each in [0, V): the result has shape idx.shape + (C) and
// weight's dtype (torch.nn.functional.embedding). The gradient of weight is
// dense (V, C), rows of repeated indices accumulating.
//
// Saves idx only (numel(idx) integers, already alive); the output,
// numel(idx)·C elements, is the only allocation.
func Embedding(weight, idx *Tensor) *Tensor {
	const name = "embedding"
	o := begin(name, weight, idx)
	if len(weight.shape) != 2 {
		fail(name, "weight %v with indices %v: want weight (V, C)", weight.shape, idx.shape)
	}
	indexDType(name, idx, weight.shape)
	shape := append(slices.Clone(idx.shape), weight.shape[1])
	return indexSelect(o, name, weight, idx, shape, 1, weight.shape[0], weight.shape[1], "vocabulary")
}

// indexSelect is IndexSelect over x viewed as (outer, n, inner), the
// output (outer, numel(idx), inner) having shape.
func indexSelect(o *op, name string, x, idx *Tensor, shape []int, outer, n, inner int, where string) *Tensor {
	ic, freeI := o.denseWork(idx)
	checkIndices(o, name, ic, n, where, x.shape)
	out := o.empty(x.dt, shape)
	xc, freeX := o.denseWork(x)
	if k := o.k(); k != nil {
		k.IndexSelect(out.operand(), xc.operand(), ic.operand(), outer, n, inner)
	}
	freeX()
	freeI()
	xshape := x.shape
	o.grad([]*Tensor{out}, []*Tensor{x, idx}, []*Tensor{nil, idx}, func(c *bctx) []*Tensor {
		g, fg := dense(c.g[0])
		defer fg()
		o := begin(name+"_backward", g, c.saved[1])
		ic, freeI := o.denseWork(c.saved[1])
		defer freeI()
		dx := o.zeros(g.dt, xshape)
		if k := o.k(); k != nil {
			k.IndexAdd(dx.operand(), ic.operand(), g.operand(), outer, n, inner)
		}
		return []*Tensor{dx, nil}
	})
	return out
}

// Gather returns out[…, j, …] = x[…, idx[…, j, …], …] along dim
// (torch.gather): idx has x's rank, I64 or I32 values in [0, x.shape[dim]),
// any size along dim and sizes ≤ x's along the other dimensions (smaller
// ones read the leading part of x); the output has idx's shape and x's
// dtype. The gradient scatter-adds into a dense zero tensor of x's shape.
//
// Saves idx only (numel(idx) integers, already alive); the output is the
// only allocation. When x is not contiguous, or idx is smaller than x along
// a dimension other than dim, x (that part of it) is read through a
// contiguous workspace copy freed before returning; backward then scatters
// into a workspace of that part's size before copying it into the gradient.
func Gather(x *Tensor, dim int, idx *Tensor) *Tensor {
	const name = "gather"
	o := begin(name, x, idx)
	d := axis(name, dim, len(x.shape))
	indexDType(name, idx, x.shape)
	if len(idx.shape) != len(x.shape) {
		fail(name, "indices %v for input %v along dimension %d: want indices of the same rank", idx.shape, x.shape, dim)
	}
	// part is the box of x that idx addresses: x's size along dim, idx's
	// elsewhere.
	part := slices.Clone(idx.shape)
	part[d] = x.shape[d]
	for i := range part {
		if part[i] > x.shape[i] {
			fail(name, "indices %v for input %v along dimension %d: dimension %d of the indices (%d) exceeds the input's (%d)", idx.shape, x.shape, dim, i, part[i], x.shape[i])
		}
	}
	whole := sameShape(part, x.shape)
	outer, n, m, inner := numel(part[:d]), part[d], idx.shape[d], numel(part[d+1:])
	ic, freeI := o.denseWork(idx)
	checkIndices(o, name, ic, n, fmt.Sprintf("dimension %d", d), x.shape)
	out := o.empty(x.dt, idx.shape)
	xv := rawView(x, x.off, part, x.strides)
	xc, freeX := o.denseWork(xv)
	if k := o.k(); k != nil {
		k.Gather(out.operand(), xc.operand(), ic.operand(), outer, n, m, inner)
	}
	freeX()
	xv.Release()
	freeI()
	xshape := x.shape
	o.grad([]*Tensor{out}, []*Tensor{x, idx}, []*Tensor{nil, idx}, func(c *bctx) []*Tensor {
		g, fg := dense(c.g[0])
		defer fg()
		o := begin(name+"_backward", g, c.saved[1])
		ic, freeI := o.denseWork(c.saved[1])
		defer freeI()
		dx := o.zeros(g.dt, xshape)
		if whole {
			if k := o.k(); k != nil {
				k.ScatterAdd(dx.operand(), ic.operand(), g.operand(), outer, n, m, inner)
			}
			return []*Tensor{dx, nil}
		}
		tmp := o.scratch(g.dt, part)
		region := rawView(dx, dx.off, part, dx.strides)
		if k := o.k(); k != nil {
			k.Fill(tmp.operand(), 0)
			k.ScatterAdd(tmp.operand(), ic.operand(), g.operand(), outer, n, m, inner)
			k.Copy(region.operand(), tmp.operand())
		}
		region.Release()
		tmp.Release()
		return []*Tensor{dx, nil}
	})
	return out
}

// indexDType fails unless idx holds I64 or I32 indices.
func indexDType(name string, idx *Tensor, xshape []int) {
	if idx.dt != dtype.I64 && idx.dt != dtype.I32 {
		fail(name, "indices %v have dtype %s for input %v: want i64 or i32", idx.shape, idx.dt, xshape)
	}
}

// checkIndices reads the contiguous indices idx on the host, when the
// device computes, and fails naming the first one outside [0, n).
func checkIndices(o *op, name string, idx *Tensor, n int, where string, xshape []int) {
	k := o.k()
	if k == nil || idx.Len() == 0 {
		return
	}
	b := make([]byte, idx.Len()*idx.dt.Size())
	k.Read(b, idx.operand())
	var vals []int64
	if idx.dt == dtype.I64 {
		vals = dtype.AsI64(b)
	} else {
		for _, v := range dtype.AsI32(b) {
			vals = append(vals, int64(v))
		}
	}
	for i, v := range vals {
		if v < 0 || v >= int64(n) {
			at := make([]int, len(idx.shape))
			for j, r := len(at)-1, i; j >= 0; j-- {
				at[j], r = r%idx.shape[j], r/idx.shape[j]
			}
			fail(name, "index %d at position %v of indices %v is out of range for %s of size %d (input %v)", v, at, idx.shape, where, n, xshape)
		}
	}
}
