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
// its columns of y from the whole input. Forward enters the region first:
// Copy (f) without sequence parallelism, Gather with it (then x is this
// rank's rows and the result has Size times as many).
//
// Memory per rank: parameters (Out·In + Out)·s/Size bytes; forward leaves
// y (…, Out/Size) and saves its input — x itself, or under sequence
// parallelism the gathered whole (Size·rows, In), which it allocates.
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
	in := enter(l.Comm, l.Seq, x)
	defer in.Release()
	return l.Local(in)
}

// Local is Forward on an input that has entered the region already (one
// entry feeds q, k and v): x·W_rᵀ + b_r, no communication.
func (l *ColumnLinear) Local(x *autograd.Tensor) *autograd.Tensor {
	defer x.Scope().Within(l.Name)()
	return autograd.Linear(x, l.Weight, l.Bias)
}

// Params returns weight and bias.
func (l *ColumnLinear) Params() []nn.Param { return params(l.Weight, l.Bias) }

// Train does nothing.
func (l *ColumnLinear) Train(bool) {}

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
	p := autograd.Linear(x, l.Weight, nil)
	var y *autograd.Tensor
	if l.Seq {
		flat := p.View(p.Len()/l.Out, l.Out)
		y = Scatter(l.Comm, flat)
		flat.Release()
	} else {
		y = Reduce(l.Comm, p)
	}
	p.Release()
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

// enter is the entry into a tensor-parallel region: Copy, or Gather under
// sequence parallelism.
func enter(c Communicator, seq bool, x *autograd.Tensor) *autograd.Tensor {
	if seq {
		return Gather(c, x)
	}
	return Copy(c, x)
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
