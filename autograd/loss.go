package autograd

import (
	"math"

	"github.com/headroom-ml/headroom/device"
	"github.com/headroom-ml/headroom/dtype"
)

// CEOptions configures CrossEntropy. Its zero value is PyTorch's default
// except for the ignore index: mean reduction, no ignored class, no label
// smoothing. (PyTorch ignores class -100 by default; here ignoring is
// explicit: Ignore: true, IgnoreIndex: -100.)
type CEOptions struct {
	// Reduction is "mean" (the default, also ""), "sum" or "none". Mean
	// divides by the number of targets that are not ignored.
	Reduction string
	// Ignore turns IgnoreIndex on: rows whose target equals it contribute
	// no loss and get no gradient.
	Ignore bool
	// IgnoreIndex is the ignored target value when Ignore is set (any int,
	// typically -100 or a padding token).
	IgnoreIndex int
	// LabelSmoothing ε in [0, 1] mixes the one-hot target with the uniform
	// distribution: loss = (1-ε)·(-log p_t) + ε·mean over classes of -log p.
	LabelSmoothing float64
}

// CrossEntropy returns the cross-entropy loss of logits (N, V) against
// integer targets (N) of dtype I64 or I32 (classes in [0, V), or the
// ignore index): -log softmax(logits)[target] per row, with label
// smoothing as in PyTorch, reduced as o.Reduction says — a scalar for
// "mean" and "sum", (N) for "none" — in F32 for F16 and BF16 logits (unlike
// PyTorch, which returns their dtype: a loss is tiny, and the gradient of a
// scaled loss would overflow an F16 scalar), else in the logits' dtype. Flatten
// (B, T, V) logits and (B, T) targets to (B·T, V) and (B·T) first.
//
// It is fused: neither the softmax nor the log-probabilities are ever
// stored. Memory: the output, plus the per-row log-sum-exp lse (N) in the
// compute dtype (F32, or F64 for F64 logits): N·4 new bytes for F32, F16
// and BF16 logits (N·8 for F64), tagged Activation (workspace without a
// recorded graph). Saves logits and targets (already alive) and lse. For
// "mean" and "sum" the forward pass borrows the per-row losses (N, in the
// output's dtype) as workspace. Strided logits or targets borrow contiguous copies.
// On a computing device the targets are copied to the host (N integers)
// to check them and count those not ignored. Backward writes
// dlogits = (softmax - smoothed one-hot)·dloss per row (0 for ignored
// rows), borrowing the per-row dloss (N) as workspace for "mean" and
// "sum" (and for a strided gradient of "none").
func CrossEntropy(logits, target *Tensor, o CEOptions) *Tensor {
	const name = "cross_entropy"
	op := begin(name, logits, target)
	if len(logits.shape) != 2 || !logits.dt.IsFloat() {
		fail(name, "logits %v %s: want a float tensor (N, V)", logits.shape, logits.dt)
	}
	n, v := logits.shape[0], logits.shape[1]
	if len(target.shape) != 1 || target.shape[0] != n || (target.dt != dtype.I64 && target.dt != dtype.I32) {
		fail(name, "logits %v and target %v %s: want target (%d) of dtype i64 or i32", logits.shape, target.shape, target.dt, n)
	}
	if target.requiresGrad {
		fail(name, "target %v requires grad: targets are not differentiable", target.shape)
	}
	red := o.Reduction
	switch red {
	case "":
		red = "mean"
	case "mean", "sum", "none":
	default:
		fail(name, "reduction %q: want \"mean\", \"sum\" or \"none\"", o.Reduction)
	}
	eps := o.LabelSmoothing
	if !(eps >= 0 && eps <= 1) {
		fail(name, "label smoothing %g: want a value in [0, 1]", eps)
	}
	if v == 0 && n > 0 {
		fail(name, "logits %v have no classes", logits.shape)
	}
	ignore := math.MinInt // the kernels' "none": no target equals it after the check below
	if o.Ignore {
		ignore = o.IgnoreIndex
	}

	td, ft := op.denseWork(target)
	defer ft()
	count := ceCheckTargets(op, td, logits.shape, v, ignore, o.Ignore)
	ld, fl := op.denseWork(logits)
	rec := op.records()
	stat := op.scratch
	if rec {
		stat = op.empty
	}
	// The loss of 16-bit logits is F32 (computeDType): the logits stay in
	// their dtype (the kernel computes in F32 anyway), so what is saved is
	// no larger than the forward made it, and a scaled loss's gradient
	// (2^16 under loss scaling) cannot overflow an F16 scalar.
	dt, odt := logits.dt, computeDType(logits.dt)
	lse := stat(computeDType(dt), []int{n})
	var out, rows *Tensor
	if red == "none" {
		out = op.empty(odt, []int{n})
		rows = out
	} else {
		rows = op.scratch(odt, []int{n})
		out = op.empty(odt, []int{})
	}
	if k := op.k(); k != nil {
		if n > 0 {
			k.CrossEntropy(rows.operand(), lse.operand(), ld.operand(), td.operand(), n, v, ignore, eps)
		}
		if red != "none" {
			sum := out.operand()
			sum.Shape, sum.Strides = []int{1}, []int{1}
			k.Reduce(device.Sum, sum, rows.operand(), 0)
			if red == "mean" {
				k.Unary(device.Scale, out.operand(), out.operand(), 1/float64(count))
			}
		}
	}
	fl()
	if rows != out {
		rows.Release()
	}
	if !rec {
		lse.Release()
		return out
	}
	op.grad([]*Tensor{out}, []*Tensor{logits, nil}, []*Tensor{logits, target, lse}, func(c *bctx) []*Tensor {
		g, lv, tv, sv := c.g[0], c.saved[0], c.saved[1], c.saved[2]
		bo := begin(name+"_backward", g, lv, tv, sv)
		var dl *Tensor
		fd := func() {}
		switch red {
		case "none":
			dl, fd = bo.denseWork(g)
		default:
			dl = bo.scratch(g.dt, []int{n})
			fd = dl.Release
		}
		ld, fl := bo.denseWork(lv)
		td, ft := bo.denseWork(tv)
		dx := bo.empty(dt, []int{n, v})
		if k := bo.k(); k != nil && n > 0 {
			switch red {
			case "sum":
				k.Copy(dl.operand(), g.expanded([]int{n}))
			case "mean":
				k.Unary(device.Scale, dl.operand(), g.expanded([]int{n}), 1/float64(count))
			}
			k.CrossEntropyGrad(dx.operand(), dl.operand(), ld.operand(), sv.operand(), td.operand(), n, v, ignore, eps)
		}
		fd()
		fl()
		ft()
		return []*Tensor{dx, nil}
	})
	lse.Release()
	return out
}

// ceCheckTargets copies the contiguous targets to the host, when the device
// computes, fails naming the first one outside [0, v) that is not ignored,
// and returns how many are not ignored (0 on a device that computes
// nothing).
func ceCheckTargets(o *op, td *Tensor, lshape []int, v, ignore int, ignoring bool) int {
	k := o.k()
	n := td.Len()
	if k == nil || n == 0 {
		return 0
	}
	buf := make([]byte, n*td.dt.Size())
	k.Read(buf, td.operand())
	at := func(i int) int64 { return dtype.AsI64(buf)[i] }
	if td.dt == dtype.I32 {
		at = func(i int) int64 { return int64(dtype.AsI32(buf)[i]) }
	}
	count := 0
	for i := range n {
		t := at(i)
		switch {
		case ignoring && t == int64(ignore):
		case t < 0 || t >= int64(v):
			fail(o.name, "logits %v: target %d of row %d is outside [0, %d)", lshape, t, i, v)
		default:
			count++
		}
	}
	return count
}

// MSELoss returns the mean squared error mean((x - y)²) of two tensors of
// one shape, a scalar of their dtype. It is composed of Sub, Pow and Mean:
// it saves x - y (x's shape and dtype, the only allocation that outlives
// the call besides the scalar); (x - y)² is freed before it returns.
func MSELoss(x, y *Tensor) *Tensor {
	o := begin("mse_loss", x, y)
	o.oneDType(true, operand{"input", x}, operand{"target", y})
	if !sameShape(x.shape, y.shape) {
		fail("mse_loss", "input %v and target %v: want one shape", x.shape, y.shape)
	}
	d := x.Sub(y)
	sq := d.Pow(2)
	d.Release()
	out := sq.Mean(false)
	sq.Release()
	return out
}
