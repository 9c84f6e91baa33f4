package autograd

import (
	"fmt"
	"slices"
)

// Contiguous returns t itself (as a new handle) when its elements are dense,
// else a dense copy. The copy saves nothing for backward.
func (t *Tensor) Contiguous() *Tensor {
	o := begin("contiguous", t)
	if t.IsContiguous() {
		return o.viewOp(t, t.off, t.shape, t.strides)
	}
	out := o.empty(t.dt, t.shape)
	if k := o.k(); k != nil {
		k.Copy(out.operand(), t.operand())
	}
	o.grad([]*Tensor{out}, []*Tensor{t}, nil, func(c *bctx) []*Tensor { return []*Tensor{share(c.g[0])} })
	return out
}

// viewOp returns a view of t sharing its storage, recording the identity
// of elements for backward: the gradient of the view reshaped to t's shape.
func (o *op) viewOp(t *Tensor, off int, shape, strides []int) *Tensor {
	v := o.view(t, off, shape, strides)
	in := t.shape
	o.grad([]*Tensor{v}, []*Tensor{t}, nil, func(c *bctx) []*Tensor {
		return []*Tensor{c.g[0].Reshape(in...)}
	})
	return v
}

// Reshape returns t with another shape of the same number of elements; one
// dimension may be -1 (inferred). It is a view when t is contiguous, else a
// copy.
func (t *Tensor) Reshape(shape ...int) *Tensor {
	o := begin("reshape", t)
	shape = inferShape("reshape", t.shape, shape)
	if !t.IsContiguous() {
		c := t.Contiguous()
		v := c.Reshape(shape...)
		c.Release()
		return v
	}
	return o.viewOp(t, t.off, shape, denseStrides(shape))
}

// View is Reshape that requires t to be contiguous (never copies).
func (t *Tensor) View(shape ...int) *Tensor {
	if !t.IsContiguous() {
		fail("view", "tensor of shape %v with strides %v is not contiguous; use Reshape (which copies) or Contiguous", t.shape, t.strides)
	}
	return t.Reshape(shape...)
}

func inferShape(op string, in, shape []int) []int {
	shape = slices.Clone(shape)
	at, known := -1, 1
	for i, s := range shape {
		switch {
		case s == -1 && at < 0:
			at = i
		case s < 0:
			fail(op, "bad target shape %v for %v", shape, in)
		default:
			known *= s
		}
	}
	n := numel(in)
	if at >= 0 {
		if known == 0 || n%known != 0 {
			fail(op, "cannot infer -1 in %v for %v (%d elements)", shape, in, n)
		}
		shape[at] = n / known
	} else if known != n {
		fail(op, "shape %v (%d elements) does not fit %v (%d elements)", shape, known, in, n)
	}
	return shape
}

// Flatten merges dimensions start…end (inclusive; negative counts from the
// end) into one.
func (t *Tensor) Flatten(start, end int) *Tensor {
	r := len(t.shape)
	if r == 0 {
		return t.Reshape(1)
	}
	s, e := axis("flatten", start, r), axis("flatten", end, r)
	if s > e {
		fail("flatten", "start %d after end %d for shape %v", start, end, t.shape)
	}
	shape := slices.Clone(t.shape[:s])
	shape = append(shape, numel(t.shape[s:e+1]))
	shape = append(shape, t.shape[e+1:]...)
	return t.Reshape(shape...)
}

// Unsqueeze inserts a dimension of size 1 at position dim.
func (t *Tensor) Unsqueeze(dim int) *Tensor {
	d := axis("unsqueeze", dim, len(t.shape)+1)
	shape := slices.Insert(slices.Clone(t.shape), d, 1)
	o := begin("unsqueeze", t)
	st := slices.Insert(slices.Clone(t.strides), d, 0)
	return o.viewOp(t, t.off, shape, st)
}

// Squeeze removes dimension dim, which must have size 1.
func (t *Tensor) Squeeze(dim int) *Tensor {
	d := axis("squeeze", dim, len(t.shape))
	if t.shape[d] != 1 {
		fail("squeeze", "dimension %d of %v has size %d, want 1", dim, t.shape, t.shape[d])
	}
	o := begin("squeeze", t)
	return o.viewOp(t, t.off, slices.Delete(slices.Clone(t.shape), d, d+1), slices.Delete(slices.Clone(t.strides), d, d+1))
}

// Permute reorders the dimensions: result dimension i is t's dimension
// dims[i]. A view.
func (t *Tensor) Permute(dims ...int) *Tensor {
	r := len(t.shape)
	if len(dims) != r {
		fail("permute", "%d dims %v for rank %d", len(dims), dims, r)
	}
	seen := make([]bool, r)
	shape, st, inv := make([]int, r), make([]int, r), make([]int, r)
	for i, d := range dims {
		d = axis("permute", d, r)
		if seen[d] {
			fail("permute", "dimension %d repeated in %v", d, dims)
		}
		seen[d] = true
		shape[i], st[i], inv[d] = t.shape[d], t.strides[d], i
	}
	o := begin("permute", t)
	v := o.view(t, t.off, shape, st)
	o.grad([]*Tensor{v}, []*Tensor{t}, nil, func(c *bctx) []*Tensor {
		return []*Tensor{c.g[0].Permute(inv...)}
	})
	return v
}

// Transpose swaps two dimensions. A view.
func (t *Tensor) Transpose(d0, d1 int) *Tensor {
	r := len(t.shape)
	dims := make([]int, r)
	for i := range dims {
		dims[i] = i
	}
	a, b := axis("transpose", d0, r), axis("transpose", d1, r)
	dims[a], dims[b] = b, a
	return t.Permute(dims...)
}

// T transposes the last two dimensions. A view.
func (t *Tensor) T() *Tensor {
	if len(t.shape) < 2 {
		fail("t", "tensor of shape %v has fewer than 2 dimensions", t.shape)
	}
	return t.Transpose(-2, -1)
}

// Slice returns elements start ≤ i < end along dim (negative bounds count
// from the end). A view; its gradient is zero outside the slice.
func (t *Tensor) Slice(dim, start, end int) *Tensor {
	d := axis("slice", dim, len(t.shape))
	n := t.shape[d]
	if start < 0 {
		start += n
	}
	if end < 0 {
		end += n
	}
	if start < 0 || end > n || start > end {
		fail("slice", "range [%d, %d) out of bounds for dimension %d of %v", start, end, dim, t.shape)
	}
	shape := slices.Clone(t.shape)
	shape[d] = end - start
	o := begin("slice", t)
	v := o.view(t, t.off+start*t.strides[d], shape, slices.Clone(t.strides))
	in := t.shape
	o.grad([]*Tensor{v}, []*Tensor{t}, nil, func(c *bctx) []*Tensor {
		g := c.g[0]
		dx := zeroLike(g, in)
		region := dx.Slice(d, start, end)
		copyInto(region, g)
		region.Release()
		return []*Tensor{dx}
	})
	return v
}

// copyInto copies src into the (possibly strided) dst view.
func copyInto(dst, src *Tensor) {
	if k := dst.dev.Kernels(); k != nil {
		k.Copy(dst.operand(), src.expanded(dst.shape))
	}
	dst.blk.Bump()
}

// Expand returns t broadcast to shape (size-1 dimensions repeat, new ones
// lead). A view with stride 0; its gradient sums over the repeats.
func (t *Tensor) Expand(shape ...int) *Tensor {
	full := broadcastShapes("expand", t.shape, shape)
	if !sameShape(full, shape) {
		fail("expand", "cannot expand %v to %v", t.shape, shape)
	}
	o := begin("expand", t)
	e := t.expanded(shape)
	v := o.view(t, t.off, slices.Clone(shape), e.Strides)
	in := t.shape
	o.grad([]*Tensor{v}, []*Tensor{t}, nil, func(c *bctx) []*Tensor {
		return []*Tensor{sumTo(share(c.g[0]), in)}
	})
	return v
}

// Detach returns a handle on t's storage that does not require grad and is
// cut from the graph.
func (t *Tensor) Detach() *Tensor {
	o := begin("detach", t)
	return o.view(t, t.off, t.shape, t.strides)
}

// Concat joins tensors along dim; all other dimensions must match. Saves
// nothing.
func Concat(dim int, ts ...*Tensor) *Tensor {
	if len(ts) == 0 {
		fail("concat", "no tensors")
	}
	o := begin("concat", ts...)
	d := axis("concat", dim, len(ts[0].shape))
	shape := slices.Clone(ts[0].shape)
	shape[d] = 0
	args := make([]operand, len(ts))
	for i, t := range ts {
		args[i] = operand{fmt.Sprintf("tensor %d", i), t}
	}
	dt := o.oneDType(false, args...)
	sizes := make([]int, len(ts))
	for i, t := range ts {
		if len(t.shape) != len(shape) {
			fail("concat", "tensor %d has shape %v, tensor 0 %v", i, t.shape, ts[0].shape)
		}
		for j := range shape {
			if j != d && t.shape[j] != ts[0].shape[j] {
				fail("concat", "tensor %d has shape %v, tensor 0 %v (only dimension %d may differ)", i, t.shape, ts[0].shape, d)
			}
		}
		sizes[i] = t.shape[d]
		shape[d] += t.shape[d]
	}
	out := o.empty(dt, shape)
	at := 0
	for i, t := range ts {
		region := out.Slice(d, at, at+sizes[i])
		copyInto(region, t)
		region.Release()
		at += sizes[i]
	}
	o.grad([]*Tensor{out}, ts, nil, func(c *bctx) []*Tensor {
		res := make([]*Tensor, len(sizes))
		at := 0
		for i, n := range sizes {
			if c.need[i] {
				res[i] = c.g[0].Slice(d, at, at+n)
			}
			at += n
		}
		return res
	})
	return out
}

// Split cuts t along dim into pieces of the given sizes (which must add up
// to the dimension). The pieces are views; one node serves them all, and
// pieces that receive no gradient contribute zeros.
func Split(t *Tensor, dim int, sizes ...int) []*Tensor {
	d := axis("split", dim, len(t.shape))
	total := 0
	for _, n := range sizes {
		if n < 0 {
			fail("split", "negative size in %v", sizes)
		}
		total += n
	}
	if total != t.shape[d] {
		fail("split", "sizes %v add up to %d, dimension %d of %v is %d", sizes, total, dim, t.shape, t.shape[d])
	}
	o := begin("split", t)
	outs := make([]*Tensor, len(sizes))
	at := 0
	for i, n := range sizes {
		shape := slices.Clone(t.shape)
		shape[d] = n
		outs[i] = o.view(t, t.off+at*t.strides[d], shape, slices.Clone(t.strides))
		at += n
	}
	in := t.shape
	o.grad(outs, []*Tensor{t}, nil, func(c *bctx) []*Tensor {
		var ref *Tensor
		for _, g := range c.g {
			if g != nil {
				ref = g
				break
			}
		}
		dx := zeroLike(ref, in)
		at := 0
		for i, n := range sizes {
			if g := c.g[i]; g != nil {
				region := dx.Slice(d, at, at+n)
				copyInto(region, g)
				region.Release()
			}
			at += n
		}
		return []*Tensor{dx}
	})
	return outs
}

// Chunk splits t along dim into n pieces of equal size (the last smaller
// when the dimension does not divide).
func Chunk(t *Tensor, n, dim int) []*Tensor {
	d := axis("chunk", dim, len(t.shape))
	if n <= 0 {
		fail("chunk", "%d chunks", n)
	}
	size := (t.shape[d] + n - 1) / n
	var sizes []int
	for left := t.shape[d]; left > 0; left -= size {
		sizes = append(sizes, min(size, left))
	}
	return Split(t, d, sizes...)
}
