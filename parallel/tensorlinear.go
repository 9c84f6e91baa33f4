package parallel

import (
	"fmt"

	"github.com/headroom-ml/headroom/autograd"
	"github.com/headroom-ml/headroom/nn"
)

// ColumnLinear is a column-parallel Linear (Megatron's ColumnParallelLinear):
// the whole layer is y = x·Wᵀ + b with W (Out, In); this rank holds the
// rows of W and b of its Out/Size output features — in the default layout
// rows [Rank·Out/Size, (Rank+1)·Out/Size), for attention's fused q, k, v
// projection those of its heads in each of the three parts — and computes
// its columns of y from the whole input. Forward enters the region: Copy
// (f) without sequence parallelism; with it x is this rank's rows (n, In)
// and Forward is GatherLinear — the result (Size·n, Out/Size) covers every
// rank's rows.
//
// Memory per rank: parameters (Out·In + Out)·s/Size bytes; forward leaves
// y (…, Out/Size) and saves its input (alive already): x itself, also
// under sequence parallelism (GatherLinear's whole input is freed at once
// and gathered again in backward).
type ColumnLinear struct {
	Name    string
	In, Out int              // the whole layer's features
	Weight  *autograd.Tensor // (Out/Size, In)
	Bias    *autograd.Tensor // (Out/Size), nil without bias
	Comm    Communicator
	Seq     bool // sequence parallelism: the input is sharded by rows
}

// Forward returns this rank's output features of x's whole-layer output.
func (l *ColumnLinear) Forward(x *autograd.Tensor) *autograd.Tensor {
	if l.Seq {
		defer x.Scope().Within(l.Name)()
		return GatherLinear(l.Comm, x, l.Weight, l.Bias)
	}
	in := Copy(l.Comm, x)
	defer in.Release()
	return l.Local(in)
}

// Local is Forward on an input that has entered the region already: x·W_rᵀ
// + b_r, no communication.
func (l *ColumnLinear) Local(x *autograd.Tensor) *autograd.Tensor {
	defer x.Scope().Within(l.Name)()
	return autograd.Linear(x, l.Weight, l.Bias)
}

// Params returns weight and bias.
func (l *ColumnLinear) Params() []nn.Param { return params(l.Weight, l.Bias) }

// Train does nothing.
func (l *ColumnLinear) Train(bool) {}

// GatherLinear is Gather followed by autograd.Linear(·, w, b) — the entry
// of a sequence-parallel region into a column-parallel Linear — saving
// this rank's rows x (n, In) instead of the gathered whole (Size·n, In):
// forward frees the whole as soon as the product is made, and backward
// all-gathers x again for the weight's gradient (Korthikanti et al.'s
// trade: one more all-gather for Size−1 of every Size rows of the input).
// Backward reduce-scatters the input's gradient (Size·n, In) to this
// rank's rows. w is (Out_r, In), b (Out_r) or nil; the result is (Size·n,
// Out_r).
func GatherLinear(c Communicator, x, w, b *autograd.Tensor) *autograd.Tensor {
	s := scopeOf("parallel.gather_linear", x)
	contiguous("parallel.gather_linear", x)
	if x.Rank() != 2 {
		panic(&autograd.Error{Op: "parallel.gather_linear", Msg: fmt.Sprintf("input %v: want this rank's rows (n, features)", x.Shape())})
	}
	var y *autograd.Tensor
	s.NoGrad(func() {
		whole := gatherRows(c, x, "gather_linear")
		defer whole.Release()
		y = autograd.Linear(whole, w, b)
	})
	autograd.Record(autograd.Custom{
		Name: "tp_gather_linear", Outs: []*autograd.Tensor{y}, Ins: []*autograd.Tensor{x, w, b}, Saved: []*autograd.Tensor{x, w},
		Backward: func(grads, saved []*autograd.Tensor, need []bool) []*autograd.Tensor {
			return gatherLinearGrad(c, grads[0], saved[0], saved[1], need)
		},
	})
	return y
}

// gatherLinearGrad is GatherLinear's backward for the output gradient g
// (Size·n, Out_r): the weight's gradient from the input gathered again,
// the bias's, and this rank's rows of the input's. Every rank needs the
// same gradients, so the collectives match.
func gatherLinearGrad(c Communicator, g, x, w *autograd.Tensor, need []bool) []*autograd.Tensor {
	res := make([]*autograd.Tensor, 3)
	if g == nil {
		return res
	}
	if need[1] {
		whole := gatherRows(c, x, "gather_linear backward")
		gt := g.T()
		res[1] = gt.MatMul(whole)
		release(whole, gt)
	}
	if need[2] {
		res[2] = g.Sum(false, 0)
	}
	if need[0] {
		dx := g.MatMul(w)
		res[0] = reduceScatter(c, dx, "gather_linear backward")
		dx.Release()
	}
	return res
}

// RowLinear is a row-parallel Linear (Megatron's RowParallelLinear): this
// rank holds the columns [Rank·In/Size, (Rank+1)·In/Size) of the whole
// weight W (Out, In) and takes the matching features of the input (a
// column-parallel layer's output), so x·W_rᵀ is its partial sum of the
// whole output. Forward leaves the region: Reduce (g, all-reduce) gives
// every rank the whole output; under sequence parallelism Scatter
// (reduce-scatter) gives each its rows of it, flattened to (rows, Out).
// The bias (whole on every rank) is added after the reduction; under
// sequence parallelism each rank adds it to its own rows, so its gradient
// is all-reduced in backward (Copy).
//
// Memory per rank: parameters (Out·In/Size + Out)·s bytes; forward saves
// x (alive already) and leaves the result; the partial sum (…, Out) lives
// until the reduction has finished (in place without sequence
// parallelism; beside the rank's rows with it).
type RowLinear struct {
	Name    string
	In, Out int              // the whole layer's features
	Weight  *autograd.Tensor // (Out, In/Size)
	Bias    *autograd.Tensor // (Out), whole; nil without bias
	Comm    Communicator
	Seq     bool
}

// Forward returns the whole layer's output (or this rank's rows of it).
func (l *RowLinear) Forward(x *autograd.Tensor) *autograd.Tensor {
	s := x.Scope()
	defer s.Within(l.Name)()
	y := leave(l.Comm, l.Seq, autograd.Linear(x, l.Weight, nil))
	if l.Bias == nil {
		return y
	}
	b := s.Use(l.Bias)
	if l.Seq {
		b.Release()
		b = enterCopy(l.Comm, s, l.Bias)
	}
	out := y.Add(b)
	y.Release()
	b.Release()
	return out
}

// Params returns weight and bias.
func (l *RowLinear) Params() []nn.Param { return params(l.Weight, l.Bias) }

// Train does nothing.
func (l *RowLinear) Train(bool) {}

// leave is the exit from a tensor-parallel region of partial sums p (…,
// c), released: Reduce, or under sequence parallelism Scatter of p
// flattened to (rows, c).
func leave(c Communicator, seq bool, p *autograd.Tensor) *autograd.Tensor {
	defer p.Release()
	if !seq {
		return Reduce(c, p)
	}
	w := p.Dim(p.Rank() - 1)
	flat := p.View(p.Len()/w, w)
	defer flat.Release()
	return Scatter(c, flat)
}

// params lists the non-nil tensors as nn params named after them.
func params(ts ...*autograd.Tensor) []nn.Param {
	var ps []nn.Param
	for _, t := range ts {
		if t != nil {
			ps = append(ps, nn.Param{Name: t.Name(), T: t})
		}
	}
	return ps
}

// piece is a run of a shard's elements: n elements at dst of the shard
// are elements [src, src+n) of the whole tensor.
type piece struct{ dst, src, n int }

// rowsPieces are the pieces of rows [lo, lo+k) of a whole tensor of rows
// of width cols.
func rowsPieces(lo, k, cols int) []piece { return []piece{{0, lo * cols, k * cols}} }

// colsPieces are the pieces of columns [lo, lo+k) of a whole (rows, cols)
// tensor: one per row.
func colsPieces(rows, cols, lo, k int) []piece {
	ps := make([]piece, rows)
	for i := range ps {
		ps[i] = piece{i * k, i*cols + lo, k}
	}
	return ps
}

// shardParam makes a parameter named name of shape holding the given
// pieces of the whole tensor that b's next normal fill N(0, std²) draws:
// the same stream an unsplit model built by b's seed gives that tensor,
// so the shard equals the corresponding elements of the whole bit for bit.
// std 0 leaves it zero (a bias). On a deferred builder the shard gets its
// storage at once (the builder's record would write the whole tensor's
// first elements, not these).
func shardParam(b *nn.Builder, name string, std float64, ps []piece, shape ...int) *autograd.Tensor {
	t := b.Param(name, shape...)
	if t.Unbound() {
		v := autograd.Param(b.Dev, b.DType, name, shape...)
		t.Bind(v)
		t.SetFetch(nil)
		v.Release()
	}
	if std == 0 {
		return t
	}
	b.Normal(t, 0, std) // takes the stream (and writes its first elements)
	if b.Dev.Kernels() == nil {
		return t // meta holds no values: no piece to write (a view per row made planning 175B take minutes)
	}
	in, _ := b.Init(t)
	flat := t.Detach()
	defer flat.Release()
	line := flat.Reshape(t.Len())
	defer line.Release()
	for _, p := range ps {
		part := line.Slice(0, p.dst, p.dst+p.n)
		in.Write(part, p.src)
		part.Release()
	}
	return t
}

// perRank returns n/size, failing when size does not divide n.
func perRank(what string, n, size int) int {
	if n%size != 0 {
		panic(&autograd.Error{Op: "parallel.tensor", Msg: fmt.Sprintf("%s %d: want a multiple of the %d tensor-parallel ranks", what, n, size)})
	}
	return n / size
}
