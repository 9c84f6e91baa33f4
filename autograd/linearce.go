package autograd

import (
	"math"

	"github.com/headroom-ml/headroom/device"
	"github.com/headroom-ml/headroom/dtype"
)

// DefaultLCEChunk is LinearCrossEntropy's default number of rows per chunk
// (LCEOptions.Chunk 0).
const DefaultLCEChunk = 256

// LCEOptions configures LinearCrossEntropy: CrossEntropy's options and the
// number of rows whose logits exist at once.
type LCEOptions struct {
	CEOptions
	// Chunk is the number of rows per chunk (0: DefaultLCEChunk; negative
	// is an error). The workspace is min(Chunk, N)·V elements.
	Chunk int
}

// LinearCrossEntropy returns CrossEntropy(Linear(x, w, b), target, o) for
// x (N, C), w (V, C), b (V) or nil and targets (N) without ever holding
// the (N, V) logits: it computes them o.Chunk rows at a time into one
// workspace of chunk·V elements (the fused linear cross-entropy of Liger
// Kernel and Cut Cross-Entropy, chunked over rows). Under autocast the
// head's GEMM runs in the 16-bit dtype and the loss in F32, as Linear and
// CrossEntropy do. Saves x, w, b (alive already), the targets and the
// per-row log-sum-exp (N, F32 or F64 for F64): N·4 (N·8) new bytes.
//
// Memory: the forward pass borrows chunk·V elements of the compute dtype
// of the GEMM (the logits of one chunk) and, for "mean" and "sum", the N
// per-row losses; backward recomputes each chunk's logits and borrows
// 2·chunk·V elements (the logits and their gradient), the N per-row
// dloss and, with a bias, V elements for the chunk's bias gradient. Its
// results are dx (N, C), dw (V, C) and db (V), as Linear's backward would
// make them; dw accumulates over the chunks in w's (autocast) dtype.
func LinearCrossEntropy(x, w, b, target *Tensor, o LCEOptions) *Tensor {
	const name = "linear_cross_entropy"
	op := begin(name, x, w, b, target)
	lc := lceCheck(name, x, w, b, target, o)
	cast, rel := op.castLow(x, w, b)
	defer rel()
	x, w, b = cast[0], cast[1], cast[2]
	dt := op.oneDType(true, operand{"input", x}, operand{"weight", w}, operand{"bias", b})
	xd, fx := op.denseWork(x)
	defer fx()
	td, ft := op.denseWork(target)
	defer ft()
	lc.count = ceCheckTargets(op, td, []int{lc.n, lc.v}, lc.v, lc.ignore, o.Ignore)
	bd, fb := lc.denseBias(op, b)
	defer fb()
	rec := op.records()
	stat := op.scratch
	if rec {
		stat = op.empty
	}
	odt := computeDType(dt)
	lse := stat(odt, []int{lc.n})
	var out, rows *Tensor
	if lc.red == "none" {
		out = op.empty(odt, []int{lc.n})
		rows = out
	} else {
		rows = op.scratch(odt, []int{lc.n})
		out = op.empty(odt, []int{})
	}
	buf := op.scratch(dt, []int{lc.chunk, lc.v})
	lc.chunks(func(r0, m int) {
		z := lc.logits(op, buf, xd, w, bd, r0, m)
		if k := op.k(); k != nil {
			k.CrossEntropy(rowsOf(rows, r0, m, 1), rowsOf(lse, r0, m, 1), z.operand(), rowsOf(td, r0, m, 1), m, lc.v, lc.ignore, lc.eps)
		}
		z.Release()
	})
	buf.Release()
	lc.reduce(op, out, rows)
	if rows != out {
		rows.Release()
	}
	if !rec {
		lse.Release()
		return out
	}
	op.grad([]*Tensor{out}, []*Tensor{x, w, b, nil}, []*Tensor{x, w, b, target, lse}, func(c *bctx) []*Tensor {
		return lc.backward(c, dt)
	})
	lse.Release()
	return out
}

// lce holds one LinearCrossEntropy call's sizes and options.
type lce struct {
	n, c, v, chunk int
	red            string
	ignore, count  int
	eps            float64
}

// lceCheck fails on bad shapes, dtypes and options before any work.
func lceCheck(name string, x, w, b, target *Tensor, o LCEOptions) *lce {
	if len(x.shape) != 2 || !x.dt.IsFloat() || len(w.shape) != 2 || w.shape[1] != x.shape[1] {
		fail(name, "input %v and weight %v: want input (N, C) and weight (V, C) of a float dtype", x.shape, w.shape)
	}
	l := &lce{n: x.shape[0], c: x.shape[1], v: w.shape[0], eps: o.LabelSmoothing, ignore: math.MinInt}
	if b != nil && (len(b.shape) != 1 || b.shape[0] != l.v) {
		fail(name, "bias %v for weight %v: want (%d)", b.shape, w.shape, l.v)
	}
	if len(target.shape) != 1 || target.shape[0] != l.n || (target.dt != dtype.I64 && target.dt != dtype.I32) {
		fail(name, "input %v and target %v %s: want target (%d) of dtype i64 or i32", x.shape, target.shape, target.dt, l.n)
	}
	if target.requiresGrad {
		fail(name, "target %v requires grad: targets are not differentiable", target.shape)
	}
	switch o.Reduction {
	case "", "mean":
		l.red = "mean"
	case "sum", "none":
		l.red = o.Reduction
	default:
		fail(name, "reduction %q: want \"mean\", \"sum\" or \"none\"", o.Reduction)
	}
	if !(l.eps >= 0 && l.eps <= 1) {
		fail(name, "label smoothing %g: want a value in [0, 1]", l.eps)
	}
	if l.v == 0 && l.n > 0 {
		fail(name, "weight %v has no classes", w.shape)
	}
	switch {
	case o.Chunk < 0:
		fail(name, "chunk %d: want a positive number of rows (0: the default %d)", o.Chunk, DefaultLCEChunk)
	case o.Chunk == 0:
		l.chunk = DefaultLCEChunk
	default:
		l.chunk = o.Chunk
	}
	l.chunk = max(min(l.chunk, l.n), 1)
	if o.Ignore {
		l.ignore = o.IgnoreIndex
	}
	return l
}

// denseBias returns a contiguous b (nil stays nil) and its release.
func (l *lce) denseBias(o *op, b *Tensor) (*Tensor, func()) {
	if b == nil {
		return nil, func() {}
	}
	return o.denseWork(b)
}

// chunks calls f for each chunk's first row and row count.
func (l *lce) chunks(f func(r0, m int)) {
	for r0 := 0; r0 < l.n; r0 += l.chunk {
		f(r0, min(l.chunk, l.n-r0))
	}
}

// logits writes rows [r0, r0+m) of x·wᵀ + b into buf and returns the view
// (m, V) of buf that holds them (the caller releases it).
func (l *lce) logits(o *op, buf, x, w, b *Tensor, r0, m int) *Tensor {
	z := rawView(buf, buf.off, []int{m, l.v}, []int{l.v, 1})
	xc := rawView(x, x.off+r0*l.c, []int{m, l.c}, []int{l.c, 1})
	wt := rawView(w, w.off, []int{l.c, l.v}, []int{w.strides[1], w.strides[0]})
	gemm(o, z, xc, wt, b, nil, 1, 0)
	xc.Release()
	wt.Release()
	return z
}

// rowsOf returns the operand of rows [r0, r0+m) of a contiguous tensor
// whose rows have width elements.
func rowsOf(t *Tensor, r0, m, width int) device.Operand {
	op := t.operand()
	op.Off += r0 * width
	if width == 1 {
		op.Shape, op.Strides = []int{m}, []int{1}
	} else {
		op.Shape, op.Strides = []int{m, width}, []int{width, 1}
	}
	return op
}

// reduce writes the sum or mean of the per-row losses into out.
func (l *lce) reduce(o *op, out, rows *Tensor) {
	k := o.k()
	if k == nil || l.red == "none" {
		return
	}
	sum := out.operand()
	sum.Shape, sum.Strides = []int{1}, []int{1}
	k.Reduce(device.Sum, sum, rows.operand(), 0)
	if l.red == "mean" {
		k.Unary(device.Scale, out.operand(), out.operand(), 1/float64(l.count))
	}
}

// backward recomputes each chunk's logits, forms their gradient and
// accumulates dx, dw and db chunk by chunk.
func (l *lce) backward(c *bctx, dt dtype.DType) []*Tensor {
	g, x, w, b, t, lse := c.g[0], c.saved[0], c.saved[1], c.saved[2], c.saved[3], c.saved[4]
	o := begin("linear_cross_entropy_backward", g, x, w, b, t, lse)
	x, fx := o.denseWork(x)
	defer fx()
	t, ft := o.denseWork(t)
	defer ft()
	b, fb := l.denseBias(o, b)
	defer fb()
	dl := l.rowGrad(o, g)
	res := make([]*Tensor, 4)
	if c.need[0] {
		res[0] = o.empty(dt, []int{l.n, l.c})
	}
	if c.need[1] {
		res[1] = o.empty(dt, []int{l.v, l.c})
		if l.n == 0 {
			res[1].Release()
			res[1] = o.zeros(dt, []int{l.v, l.c})
		}
	}
	var db, dbc *Tensor
	if c.need[2] {
		db = o.zeros(dt, []int{l.v})
		dbc = o.scratch(dt, []int{1, l.v})
		res[2] = db
	}
	buf := o.scratch(dt, []int{l.chunk, l.v})
	dz := o.scratch(dt, []int{l.chunk, l.v})
	l.chunks(func(r0, m int) {
		z := l.logits(o, buf, x, w, b, r0, m)
		d := rawView(dz, dz.off, []int{m, l.v}, []int{l.v, 1})
		if k := o.k(); k != nil {
			k.CrossEntropyGrad(d.operand(), rowsOf(dl, r0, m, 1), z.operand(), rowsOf(lse, r0, m, 1), rowsOf(t, r0, m, 1), m, l.v, l.ignore, l.eps)
		}
		l.accumulate(o, res, dbc, d, x, w, r0, m)
		z.Release()
		d.Release()
	})
	buf.Release()
	dz.Release()
	dl.Release()
	if dbc != nil {
		dbc.Release()
	}
	return res
}

// rowGrad returns the per-row loss gradient (N) as workspace: g spread
// over the rows for "sum", divided by the count for "mean", g itself
// (contiguous) for "none".
func (l *lce) rowGrad(o *op, g *Tensor) *Tensor {
	dl := o.scratch(g.dt, []int{l.n})
	k := o.k()
	if k == nil || l.n == 0 {
		return dl
	}
	switch l.red {
	case "none":
		k.Copy(dl.operand(), g.operand())
	case "sum":
		k.Copy(dl.operand(), g.expanded([]int{l.n}))
	case "mean":
		k.Unary(device.Scale, dl.operand(), g.expanded([]int{l.n}), 1/float64(l.count))
	}
	return dl
}

// accumulate adds the chunk's contributions to the gradients: dx rows
// [r0, r0+m) = dz·w, dw (+)= dzᵀ·x_chunk, db += the column sums of dz.
func (l *lce) accumulate(o *op, res []*Tensor, dbc, dz, x, w *Tensor, r0, m int) {
	if dx := res[0]; dx != nil {
		rows := rawView(dx, dx.off+r0*l.c, []int{m, l.c}, []int{l.c, 1})
		gemm(o, rows, dz, w, nil, nil, 1, 0)
		rows.Release()
	}
	if dw := res[1]; dw != nil {
		dzt := rawView(dz, dz.off, []int{l.v, m}, []int{1, l.v})
		xc := rawView(x, x.off+r0*l.c, []int{m, l.c}, []int{l.c, 1})
		gemm(o, dw, dzt, xc, nil, nil, 1, float64(min(r0, 1)))
		dzt.Release()
		xc.Release()
	}
	if db := res[2]; db != nil {
		if k := o.k(); k != nil {
			k.Reduce(device.Sum, dbc.operand(), dz.operand(), 0)
			k.Axpy(1, dbc.expanded([]int{l.v}), db.operand())
		}
	}
}
