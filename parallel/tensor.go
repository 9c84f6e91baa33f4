package parallel

import (
	"fmt"

	"github.com/headroom-ml/headroom/autograd"
)

// The conjugate pairs of tensor parallelism (Shoeybi et al. 2019,
// Korthikanti et al. 2022): each is an autograd op whose backward is the
// other direction's collective, so a tensor-parallel region is entered by
// one and left by its conjugate. Every rank of the tensor-parallel group
// runs the same ops in the same order, so their collectives match. A
// failed collective panics with an *autograd.Error wrapping the
// communicator's error (an *AbortError when another rank failed), which
// Scope.Run, Try and Backward return.

// Copy is Megatron's f: the identity in forward (a new handle on x, no
// bytes), the all-reduce (sum) of the gradient in backward. A replicated
// tensor enters a region whose ranks each use it for their own part (the
// input of a column-parallel Linear), so its gradient is the sum of the
// ranks' contributions. Backward allocates the gradient (x's shape).
func Copy(c Communicator, x *autograd.Tensor) *autograd.Tensor {
	return enterCopy(c, scopeOf("parallel.copy", x), x)
}

// enterCopy is Copy with the result owned by s: x may be a parameter (a
// replicated weight used on this rank's rows of a sequence-sharded
// tensor, whose gradient is the sum of the ranks').
func enterCopy(c Communicator, s *autograd.Scope, x *autograd.Tensor) *autograd.Tensor {
	out := s.Adopt(x)
	autograd.Record(autograd.Custom{
		Name: "tp_copy", Outs: []*autograd.Tensor{out}, Ins: []*autograd.Tensor{x},
		Backward: func(grads, _ []*autograd.Tensor, need []bool) []*autograd.Tensor {
			if grads[0] == nil || !need[0] {
				return []*autograd.Tensor{nil}
			}
			dx := grads[0].Scale(1)
			allReduce(c, dx, "tp_copy backward")
			return []*autograd.Tensor{dx}
		},
	})
	return out
}

// Reduce is Megatron's g: the all-reduce (sum) of x across the ranks in
// forward, the identity in backward. It leaves a row-parallel Linear's
// partial sums as the replicated whole. It reduces in place — x holds the
// sum afterwards too and its storage's version is bumped, so a consumer
// that saved x fails its backward instead of reading the sum — and the
// result is a new handle on that storage (no bytes). x must be contiguous.
func Reduce(c Communicator, x *autograd.Tensor) *autograd.Tensor {
	out := scopeOf("parallel.reduce", x).Adopt(x)
	contiguous("parallel.reduce", x)
	allReduce(c, out, "reduce")
	out.Block().Bump()
	autograd.Record(autograd.Custom{
		Name: "tp_reduce", Outs: []*autograd.Tensor{out}, Ins: []*autograd.Tensor{x},
		Backward: func(grads, _ []*autograd.Tensor, need []bool) []*autograd.Tensor {
			if grads[0] == nil || !need[0] {
				return []*autograd.Tensor{nil}
			}
			return []*autograd.Tensor{grads[0].Scale(1)}
		},
	})
	return out
}

// Gather is sequence parallelism's entry into a tensor-parallel region
// (Korthikanti's g): x (n, …), this rank's rows of a sequence-sharded
// tensor, becomes the whole (Size·n, …), the ranks' rows in rank order, by
// an all-gather; backward reduce-scatters the gradient back to this rank's
// rows. It allocates the whole tensor (forward) and this rank's gradient
// rows (backward). x must be contiguous.
func Gather(c Communicator, x *autograd.Tensor) *autograd.Tensor {
	scopeOf("parallel.gather", x)
	contiguous("parallel.gather", x)
	out := gatherRows(c, x, "gather")
	autograd.Record(autograd.Custom{
		Name: "tp_gather", Outs: []*autograd.Tensor{out}, Ins: []*autograd.Tensor{x},
		Backward: func(grads, _ []*autograd.Tensor, need []bool) []*autograd.Tensor {
			if grads[0] == nil || !need[0] {
				return []*autograd.Tensor{nil}
			}
			return []*autograd.Tensor{reduceScatter(c, grads[0], "tp_gather backward")}
		},
	})
	return out
}

// Scatter is sequence parallelism's exit from a tensor-parallel region
// (Korthikanti's ḡ): x (Size·n, …), this rank's partial sums of the whole,
// becomes this rank's rows (n, …) of the sum by a reduce-scatter; backward
// all-gathers the gradient. It allocates this rank's rows (forward) and the
// whole gradient (backward). x's first dimension must divide by Size.
func Scatter(c Communicator, x *autograd.Tensor) *autograd.Tensor {
	scopeOf("parallel.scatter", x)
	out := reduceScatter(c, x, "scatter")
	autograd.Record(autograd.Custom{
		Name: "tp_scatter", Outs: []*autograd.Tensor{out}, Ins: []*autograd.Tensor{x},
		Backward: func(grads, _ []*autograd.Tensor, need []bool) []*autograd.Tensor {
			if grads[0] == nil || !need[0] {
				return []*autograd.Tensor{nil}
			}
			g := grads[0].Contiguous()
			defer g.Release()
			return []*autograd.Tensor{gatherRows(c, g, "tp_scatter backward")}
		},
	})
	return out
}

// gatherRows returns every rank's x (n, …, contiguous) as (Size·n, …), a
// new graph-less tensor of x's scope.
func gatherRows(c Communicator, x *autograd.Tensor, what string) *autograd.Tensor {
	shape := append([]int{c.Size() * x.Dim(0)}, x.Shape()[1:]...)
	out := x.Scope().Zeros(x.Device(), x.DType(), shape...)
	collective(what, func() error { return c.AllGather(out, x) })
	return out
}

// reduceScatter returns this rank's rows of the sum of every rank's x, a
// new graph-less tensor of x's scope.
func reduceScatter(c Communicator, x *autograd.Tensor, what string) *autograd.Tensor {
	if x.Rank() == 0 || x.Dim(0)%c.Size() != 0 {
		panic(&autograd.Error{Op: "parallel." + what, Msg: fmt.Sprintf("input %v: want a first dimension divisible by the %d ranks", x.Shape(), c.Size())})
	}
	src := x.Contiguous()
	defer src.Release()
	shape := append([]int{x.Dim(0) / c.Size()}, x.Shape()[1:]...)
	out := x.Scope().Zeros(x.Device(), x.DType(), shape...)
	collective(what, func() error { return c.ReduceScatter(out, src, Sum) })
	return out
}

// allReduce sums t across the ranks in place.
func allReduce(c Communicator, t *autograd.Tensor, what string) {
	collective(what, func() error { return c.AllReduce(t, Sum) })
}

// collective runs f, panicking with an *autograd.Error wrapping its error.
func collective(what string, f func() error) {
	if err := f(); err != nil {
		panic(&autograd.Error{Op: "parallel." + what, Err: err, Msg: err.Error()})
	}
}

// scopeOf returns x's scope, failing for a free-standing x: the ops of a
// tensor-parallel region belong to a step.
func scopeOf(op string, x *autograd.Tensor) *autograd.Scope {
	s := x.Scope()
	if s == nil {
		panic(&autograd.Error{Op: op, Msg: fmt.Sprintf("input %v is free-standing: make it in the step's Scope", x.Shape())})
	}
	return s
}

// contiguous fails for a strided x: the collectives move dense tensors.
func contiguous(op string, x *autograd.Tensor) {
	if !x.IsContiguous() {
		panic(&autograd.Error{Op: op, Msg: fmt.Sprintf("input %v is strided: want a contiguous tensor", x.Shape())})
	}
}
