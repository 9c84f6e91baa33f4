package autograd

import (
	"slices"

	"github.com/headroom-ml/headroom/device"
)

// MatMul returns the matrix product of a (…, M, K) and b (…, K, N): shape
// (…, M, N), the batch dimensions broadcast (torch.matmul for rank ≥ 2).
// Transposed views (T, Transpose) are read in place, without copies. Saves
// b when a needs a gradient and a when b does.
func (a *Tensor) MatMul(b *Tensor) *Tensor {
	if len(a.shape) < 2 || len(b.shape) < 2 {
		fail("matmul", "shapes %v and %v: both operands need at least 2 dimensions (Unsqueeze vectors)", a.shape, b.shape)
	}
	return matmul("matmul", a, b)
}

// BMM is MatMul of two batches of matrices with the same batch
// dimensions, a (…, M, K) and b (…, K, N) → (…, M, N) (torch.bmm for any
// number of batch dimensions). It computes what MatMul does; only its op
// kind differs, "bmm", the product of two activations (a materialized
// attention's q·kᵀ and weights·v) that checkpoint.DefaultPolicy
// recomputes, as torchtitan's selective checkpointing saves aten.mm but
// not aten.bmm.
func BMM(a, b *Tensor) *Tensor {
	if len(a.shape) < 3 || len(a.shape) != len(b.shape) || !sameShape(a.shape[:len(a.shape)-2], b.shape[:len(b.shape)-2]) {
		fail("bmm", "shapes %v and %v: want two batches (rank ≥ 3) with the same batch dimensions", a.shape, b.shape)
	}
	return matmul("bmm", a, b)
}

// matmul is MatMul and BMM under op kind name.
func matmul(name string, a, b *Tensor) *Tensor {
	o := begin(name, a, b)
	cast, rel := o.castLow(a, b)
	defer rel()
	a, b = cast[0], cast[1]
	ra, rb := len(a.shape), len(b.shape)
	m, ka, kb, n := a.shape[ra-2], a.shape[ra-1], b.shape[rb-2], b.shape[rb-1]
	if ka != kb {
		fail(name, "shapes %v and %v: inner dimensions %d and %d differ", a.shape, b.shape, ka, kb)
	}
	dt := o.oneDType(true, operand{"a", a}, operand{"b", b})
	batch := broadcastShapes(name, a.shape[:ra-2], b.shape[:rb-2])
	shape := append(slices.Clone(batch), m, n)
	out := o.replayed(dt, shape) // a recomputation that kept it skips the product
	if out == nil {
		out = o.empty(dt, shape)
		gemm(o, out, a, b, nil, batch, 1, 0)
		o.logged(out)
	}
	as, bs := a.shape, b.shape
	o.grad([]*Tensor{out}, []*Tensor{a, b}, []*Tensor{pick(b.requiresGrad, a), pick(a.requiresGrad, b)}, func(c *bctx) []*Tensor {
		g, x, y := c.g[0], c.saved[0], c.saved[1]
		var da, db *Tensor
		if c.need[0] {
			yt := y.T()
			da = sumTo(g.MatMul(yt), as)
			yt.Release()
		}
		if c.need[1] {
			if len(bs) == 2 && len(as) > 2 {
				// b is shared by the whole batch: fold the batch into rows
				// instead of making one product per batch entry.
				x2 := x.Reshape(-1, as[len(as)-1])
				g2 := g.Reshape(-1, g.shape[len(g.shape)-1])
				x2t := x2.T()
				db = x2t.MatMul(g2)
				for _, t := range []*Tensor{x2, g2, x2t} {
					t.Release()
				}
			} else {
				xt := x.T()
				db = sumTo(xt.MatMul(g), bs)
				xt.Release()
			}
		}
		return []*Tensor{da, db}
	})
	return out
}

// matView says how GEMM reads the last two dimensions of an operand:
// transposed or not, with which row stride.
func matView(t *Tensor) (trans bool, ld int, ok bool) {
	r := len(t.shape)
	rows, cols := t.shape[r-2], t.shape[r-1]
	sr, sc := t.strides[r-2], t.strides[r-1]
	switch {
	case (sc == 1 || cols == 1) && (rows == 1 || sr >= cols):
		if rows == 1 {
			return false, max(cols, 1), true
		}
		return false, sr, true
	case (sr == 1 || rows == 1) && (cols == 1 || sc >= rows):
		if cols == 1 {
			return true, max(rows, 1), true
		}
		return true, sc, true
	}
	return false, 0, false
}

// gemm computes out = alpha·a·b + (beta·out + bias) over broadcast batch
// dimensions, copying an operand only when its last two dimensions have no
// GEMM layout. bias, nil or a contiguous vector of out's last dimension, is
// added by the GEMM's store (device.Gemm's Bias).
func gemm(o *op, out, a, b, bias *Tensor, batch []int, alpha, beta float64) {
	k := o.k()
	ta, lda, ok := matView(a)
	if !ok {
		c := copyDense(a)
		defer c.Release()
		a = c
		ta, lda, _ = matView(a)
	}
	tb, ldb, ok := matView(b)
	if !ok {
		c := copyDense(b)
		defer c.Release()
		b = c
		tb, ldb, _ = matView(b)
	}
	ra, rb, rc := len(a.shape), len(b.shape), len(out.shape)
	m, kk, n := a.shape[ra-2], a.shape[ra-1], b.shape[rb-1]
	// batch strides of each operand, 0 where it broadcasts
	bst := func(t *Tensor) []int {
		full := append(slices.Clone(batch), t.shape[len(t.shape)-2:]...)
		e := t.expanded(full)
		return e.Strides[:len(batch)]
	}
	sa, sb, sc := bst(a), bst(b), out.strides[:rc-2]
	// The trailing batch dimensions from split on collapse into one stride
	// for all three operands; the leading ones are looped over.
	split := len(batch)
	for split > 0 {
		i := split - 1
		if i == len(batch)-1 {
			split--
			continue
		}
		coll := func(s []int) bool { return s[i] == s[i+1]*batch[i+1] || batch[i] == 1 }
		if !coll(sa) || !coll(sb) || !coll(sc) {
			break
		}
		split--
	}
	inner := numel(batch[split:])
	stride := func(s []int) int {
		if len(s) == 0 {
			return 0
		}
		return s[len(s)-1]
	}
	g := device.Gemm{
		TransA: ta, TransB: tb, M: m, N: n, K: kk, Alpha: alpha, Beta: beta,
		LdA: lda, LdB: ldb, LdC: n, Batch: inner,
		StrideA: stride(sa), StrideB: stride(sb), StrideC: stride(sc),
	}
	outer := batch[:split]
	idx := make([]int, len(outer))
	for {
		offA, offB, offC := a.off, b.off, out.off
		for d, i := range idx {
			offA += i * sa[d]
			offB += i * sb[d]
			offC += i * sc[d]
		}
		g.A, g.B, g.C = a.operand(), b.operand(), out.operand()
		g.A.Off, g.B.Off, g.C.Off = offA, offB, offC
		if bias != nil {
			g.Bias = bias.operand()
		}
		if k != nil {
			k.Gemm(g)
		}
		d := len(idx) - 1
		for ; d >= 0; d-- {
			idx[d]++
			if idx[d] < outer[d] {
				break
			}
			idx[d] = 0
		}
		if d < 0 {
			break
		}
	}
	out.blk.Bump()
}

// Linear returns x·wᵀ + b for x (…, in), w (out, in) and b (out) or nil:
// PyTorch's F.linear, with the bias added by the GEMM as it stores each
// tile of the output (device.Gemm's Bias: no pass over the output for the
// bias). Saves x when w needs a gradient and w when x does; the output
// (…, out) is its only allocation (and a contiguous copy of a strided b).
func Linear(x, w, b *Tensor) *Tensor {
	o := begin("linear", x, w, b)
	cast, rel := o.castLow(x, w, b)
	defer rel()
	x, w, b = cast[0], cast[1], cast[2]
	if len(w.shape) != 2 || len(x.shape) < 1 || x.shape[len(x.shape)-1] != w.shape[1] {
		fail("linear", "input %v and weight %v: want input (…, %d) for weight (out, in)", x.shape, w.shape, lastOr(w.shape, 1))
	}
	nout := w.shape[0]
	if b != nil && (len(b.shape) != 1 || b.shape[0] != nout) {
		fail("linear", "bias %v for weight %v: want (%d)", b.shape, w.shape, nout)
	}
	dt := o.oneDType(true, operand{"input", x}, operand{"weight", w}, operand{"bias", b})
	shape := append(slices.Clone(x.shape[:len(x.shape)-1]), nout)
	out := o.replayed(dt, shape) // a recomputation that kept it skips the product
	fresh := out == nil
	if fresh {
		out = o.empty(dt, shape)
	}
	xc := x
	if !x.IsContiguous() {
		xc = x.Contiguous()
		defer xc.Release()
	}
	if fresh {
		linearGemm(o, out, xc, w, b, shape)
		o.logged(out)
	}
	xs, ws := x.shape, w.shape
	o.grad([]*Tensor{out}, []*Tensor{x, w, b}, []*Tensor{pick(w.requiresGrad, xc), pick(x.requiresGrad, w)}, func(c *bctx) []*Tensor {
		g, fg := dense(c.g[0])
		defer fg()
		g2 := g.reshapeView([]int{numel(g.shape) / ws[0], ws[0]})
		defer g2.Release()
		res := make([]*Tensor, 3)
		if c.need[0] {
			dx := g2.MatMul(c.saved[1])
			res[0] = dx.Reshape(xs...)
			dx.Release()
		}
		if c.need[1] {
			x2 := c.saved[0].Reshape(-1, ws[1])
			gt := g2.T()
			res[1] = gt.MatMul(x2)
			gt.Release()
			x2.Release()
		}
		if c.need[2] {
			res[2] = g2.Sum(false, 0)
		}
		return res
	})
	return out
}

// linearBiasCopy makes Linear copy its bias into the output and run the
// GEMM with beta 1, as it did before the GEMM took a bias: only the
// same-run benchmarks and the bit-exactness test set it (export_test.go).
var linearBiasCopy bool

func lastOr(s []int, d int) int {
	if len(s) == 0 {
		return d
	}
	return s[len(s)-1]
}

// linearGemm computes out = xc·wᵀ (+ b) for Linear.
func linearGemm(o *op, out, xc, w, b *Tensor, shape []int) {
	nout := w.shape[0]
	bias, beta := b, 0.0
	if b != nil && linearBiasCopy {
		if k := o.k(); k != nil {
			k.Copy(out.operand(), b.expanded(shape))
		}
		bias, beta = nil, 1
	} else if b != nil && !b.IsContiguous() {
		bias = b.Contiguous()
		defer bias.Release()
	}
	x2 := xc.reshapeView([]int{numel(xc.shape[:len(xc.shape)-1]), w.shape[1]})
	o2 := out.reshapeView([]int{x2.shape[0], nout})
	wt := rawView(w, w.off, []int{w.shape[1], w.shape[0]}, []int{w.strides[1], w.strides[0]})
	gemm(o, o2, x2, wt, bias, nil, 1, beta)
	for _, t := range []*Tensor{x2, o2, wt} {
		t.Release()
	}
}
