package parallel

import (
	"fmt"

	"github.com/headroom-ml/headroom/autograd"
	"github.com/headroom-ml/headroom/device"
	"github.com/headroom-ml/headroom/dtype"
	"github.com/headroom-ml/headroom/nn"
)

// VocabEmbedding is a vocabulary-parallel embedding (Megatron's
// VocabParallelEmbedding): this rank holds rows [Lo, Lo+Vocab/Size) of the
// whole (Vocab, C) table. Forward looks every index up in its rows — an
// index outside them reads row 0 and is multiplied by 0 — and sums the
// ranks' lookups: Reduce gives every rank the whole (…, C) result, Scatter
// under sequence parallelism this rank's rows of it, flattened to
// (rows, C). The LM head of a tied model uses the same rows.
//
// Memory per rank: parameters Vocab·C·s/Size bytes (a dense gradient of
// that size); forward reads the indices to the host (numel(idx) integers,
// Go heap) and leaves the local indices (numel(idx)·8 bytes, I64) and the
// mask (numel(idx)·s) that its ops save, and the result: the masked
// lookup reduced in place (numel(idx)·C·s), or this rank's rows of it
// under sequence parallelism (the masked lookup freed after the
// reduce-scatter). The lookup before masking is freed at once.
type VocabEmbedding struct {
	Name   string
	Vocab  int // the whole vocabulary
	Lo     int // this rank's first row
	C      int
	Weight *autograd.Tensor // (Vocab/Size, C)
	Comm   Communicator
	Seq    bool
}

// Forward returns the rows of the whole table at idx (I64 or I32, values
// in [0, Vocab)), which must belong to a Scope.
func (e *VocabEmbedding) Forward(idx *autograd.Tensor) *autograd.Tensor {
	s := scopeOf("parallel.vocab_embedding", idx)
	defer s.Within(e.Name)()
	ids := idx.Int64s()
	rows := e.Weight.Dim(0)
	local := make([]int64, len(ids))
	mask := make([]float64, len(ids))
	for i, id := range ids {
		if id < 0 || id >= int64(e.Vocab) {
			panic(&autograd.Error{Op: "parallel.vocab_embedding", Msg: fmt.Sprintf("%s: index %d at %d is outside [0, %d)", e.Name, id, i, e.Vocab)})
		}
		if l := id - int64(e.Lo); l >= 0 && l < int64(rows) {
			local[i], mask[i] = l, 1
		}
	}
	dev := e.Weight.Device()
	li := s.FromInt64s(dev, idx.Shape(), local)
	m := constant(s, dev, e.Weight.DType(), append(idx.Shape(), 1), mask)
	looked := autograd.Embedding(e.Weight, li)
	part := looked.Mul(m)
	release(li, m, looked)
	return leave(e.Comm, e.Seq, part)
}

// Params returns the table's rows.
func (e *VocabEmbedding) Params() []nn.Param { return params(e.Weight) }

// Train does nothing.
func (e *VocabEmbedding) Train(bool) {}

// release drops handles a forward made.
func release(ts ...*autograd.Tensor) {
	for _, t := range ts {
		if t != nil {
			t.Release()
		}
	}
}

// CrossEntropy is the cross-entropy of logits whose classes are split
// across the ranks (Megatron's vocab_parallel_cross_entropy): logits (N,
// V/Size) are this rank's classes [lo, lo+V/Size) of every row, target
// (N) the whole rows' classes in [0, vocab) (or o's ignore index); the
// result is autograd.CrossEntropy's of the whole logits — mean, sum or
// per row as o says, label smoothing and the ignore index likewise — the
// same on every rank, and no rank holds the whole logits. 16-bit logits
// are computed in F32 (a cast of this rank's logits).
//
// Per row: the maximum over the whole row is the maximum of the ranks'
// maxima (AllGather of N values each, outside the graph: the log-sum-exp
// does not depend on it); Σ exp(z − max) and the target's logit (this
// rank's, 0 when another rank holds it) are summed by Reduce, and under
// label smoothing the sum of the row's logits too. Backward communicates
// nothing: the gradient of this rank's logits is softmax − smoothed
// one-hot on its own classes.
//
// Memory per rank: it saves exp(z − max) (N·V/Size elements of the
// compute dtype) and per-row vectors — Σ exp, the target's logit, the
// masks, the targets' local indices — 5·N elements (measured: 840 bytes
// with the scalar loss for N = V/Size = 8 in F64); the targets are read
// to the host (N integers, Go heap).
func CrossEntropy(c Communicator, logits, target *autograd.Tensor, lo, vocab int, o autograd.CEOptions) *autograd.Tensor {
	const op = "parallel.cross_entropy"
	s := scopeOf(op, logits)
	if logits.Rank() != 2 || target.Rank() != 1 || target.Dim(0) != logits.Dim(0) {
		panic(&autograd.Error{Op: op, Msg: fmt.Sprintf("logits %v and target %v: want (N, V/ranks) and (N)", logits.Shape(), target.Shape())})
	}
	z := logits
	if dt := logits.DType(); dt == dtype.F16 || dt == dtype.BF16 {
		z = logits.Cast(dtype.F32)
		defer z.Release()
	}
	n, v := z.Dim(0), z.Dim(1)
	tgt := ceTargets(op, target.Int64s(), lo, v, vocab, o)
	dev, dt := z.Device(), z.DType()
	var peak *autograd.Tensor // (N, 1), outside the graph
	s.NoGrad(func() { peak = rowMax(c, z) })
	shifted := z.Sub(peak)
	ex := shifted.Exp()
	sum := ex.Sum(false, 1)
	total := Reduce(c, sum)
	logt := total.Log()
	mx := peak.Squeeze(1)
	lse := logt.Add(mx)
	release(shifted, ex, sum, total, logt, mx, peak)
	li := s.FromInt64s(dev, []int{n, 1}, tgt.local)
	picked := autograd.Gather(z, 1, li)
	have := constant(s, dev, dt, []int{n, 1}, tgt.here)
	mine := picked.Mul(have)
	flat := mine.Squeeze(1)
	zt := Reduce(c, flat)
	release(li, picked, have, mine, flat)
	scaled := zt.Scale(1 - o.LabelSmoothing)
	loss := lse.Sub(scaled)
	if eps := o.LabelSmoothing; eps > 0 {
		loss = smooth(c, z, loss, eps/float64(vocab))
	}
	release(lse, zt, scaled)
	keep := constant(s, dev, dt, []int{n}, tgt.valid)
	rows := loss.Mul(keep)
	release(loss, keep)
	if o.Reduction == "none" {
		return rows
	}
	out := rows.Sum(false)
	rows.Release()
	if o.Reduction == "sum" {
		return out
	}
	mean := out.Scale(1 / float64(max(tgt.count, 1))) // a mean over no rows is 0
	out.Release()
	return mean
}

// smooth returns loss − w·Σ (the row's logits over the whole vocabulary),
// label smoothing's term, releasing loss.
func smooth(c Communicator, z, loss *autograd.Tensor, w float64) *autograd.Tensor {
	mine := z.Sum(false, 1)
	all := Reduce(c, mine)
	part := all.Scale(w)
	out := loss.Sub(part)
	release(mine, all, part, loss)
	return out
}

// constant makes a graph-less tensor of dtype dt holding v.
func constant(s *autograd.Scope, dev *device.Device, dt dtype.DType, shape []int, v []float64) *autograd.Tensor {
	t := s.FromFloat64s(dev, shape, v)
	if dt == dtype.F64 {
		return t
	}
	defer t.Release()
	return t.Cast(dt)
}

// rowMax returns the maximum of every row of the whole logits (N, 1): the
// ranks' maxima of their classes, all-gathered.
func rowMax(c Communicator, z *autograd.Tensor) *autograd.Tensor {
	s, n := z.Scope(), z.Dim(0)
	mine := z.Max(false, 1)
	all := s.Zeros(z.Device(), z.DType(), c.Size(), n)
	collective("cross_entropy max", func() error { return c.AllGather(all, mine) })
	m := all.Max(false, 0).Unsqueeze(1)
	release(mine, all)
	return m
}

// ceTarget is the host's view of the targets for one rank's classes.
type ceTarget struct {
	local []int64   // the target's column here (0 elsewhere)
	here  []float64 // 1 where this rank holds the target's class
	valid []float64 // 1 where the row is not ignored
	count int       // rows not ignored
}

// ceTargets checks the targets and sorts them out for classes [lo, lo+v).
func ceTargets(op string, ts []int64, lo, v, vocab int, o autograd.CEOptions) ceTarget {
	switch {
	case o.Reduction != "" && o.Reduction != "mean" && o.Reduction != "sum" && o.Reduction != "none":
		panic(&autograd.Error{Op: op, Msg: fmt.Sprintf("reduction %q: want \"mean\", \"sum\" or \"none\"", o.Reduction)})
	case !(o.LabelSmoothing >= 0 && o.LabelSmoothing <= 1):
		panic(&autograd.Error{Op: op, Msg: fmt.Sprintf("label smoothing %g: want a value in [0, 1]", o.LabelSmoothing)})
	case lo < 0 || lo+v > vocab:
		panic(&autograd.Error{Op: op, Msg: fmt.Sprintf("classes [%d, %d) outside the vocabulary of %d", lo, lo+v, vocab)})
	}
	r := ceTarget{local: make([]int64, len(ts)), here: make([]float64, len(ts)), valid: make([]float64, len(ts))}
	for i, t := range ts {
		if o.Ignore && t == int64(o.IgnoreIndex) {
			continue
		}
		if t < 0 || t >= int64(vocab) {
			panic(&autograd.Error{Op: op, Msg: fmt.Sprintf("target %d of row %d is outside [0, %d)", t, i, vocab)})
		}
		r.valid[i], r.count = 1, r.count+1
		if l := t - int64(lo); l >= 0 && l < int64(v) {
			r.local[i], r.here[i] = l, 1
		}
	}
	return r
}
