package parallel

import "github.com/headroom-ml/headroom/autograd"

// Op is the reduction of AllReduce and ReduceScatter.
type Op int

// The reductions: Sum adds the ranks' values; Avg divides that sum by the
// number of ranks (data parallelism averages gradients).
const (
	Sum Op = iota
	Avg
)

// Communicator moves tensors between the ranks of a data-parallel group.
// Every rank calls the same collectives in the same order with tensors of
// the same shapes and dtypes (F32, BF16 or F16 — the in-process group also
// takes F64; 16-bit reductions accumulate in F32). Tensors are contiguous;
// they may be views (a bucket of a flat buffer). Collectives block until every rank has
// joined, or fail on every rank once any rank has called Abort. A rank's
// Communicator is used by one goroutine at a time (that may be a goroutine
// other than the one that trains, as long as the two take turns).
// NewGroup makes the in-process implementation.
type Communicator interface {
	// Rank is this rank's index in [0, Size).
	Rank() int
	// Size is the number of ranks.
	Size() int
	// AllReduce replaces t on every rank by the reduction of all ranks' t.
	AllReduce(t *autograd.Tensor, op Op) error
	// ReduceScatter reduces src (Size·n elements, the same on every rank
	// in shape) across ranks and leaves in dst (n elements) this rank's
	// slice [Rank·n, (Rank+1)·n) of the result. dst must not overlap src.
	ReduceScatter(dst, src *autograd.Tensor, op Op) error
	// AllGather concatenates every rank's src (n elements) into dst
	// (Size·n elements), rank order. src may be dst's own slot
	// [Rank·n, (Rank+1)·n) — a gather in place, which ZeRO uses to share
	// each rank's updated shard of the flat parameter buffer (MPI_IN_PLACE);
	// otherwise it must not overlap dst.
	AllGather(dst, src *autograd.Tensor) error
	// Broadcast copies root's t into every rank's t.
	Broadcast(t *autograd.Tensor, root int) error
	// Barrier returns when every rank has called it.
	Barrier() error
	// Abort makes every pending and future collective on every rank fail
	// with err: a rank that fails (out of memory, say) calls it so that
	// the others do not wait for it forever.
	Abort(err error)
}

// PointToPoint is implemented by communicators that move a tensor from
// one rank to one other (pipeline parallelism sends activations and their
// gradients between neighbouring stages). It is optional, so that every
// Communicator need not have it: the in-process group (cpu and cuda
// tensors) and MPI (host tensors) do, NCCL does not yet. Send and Recv block until the transfer is done (a send
// may wait for the matching receive to begin, as MPI_Ssend), so two ranks
// that send to each other at once must use SendRecv; a pending call fails
// with *AbortError (in process) once any rank has called Abort, and with
// an error when the peer has returned from Run without the matching call.
// The two sides agree on the dtype and element count (not the shape):
// a mismatch fails both.
type PointToPoint interface {
	// Send copies t (contiguous) to rank to's matching Recv.
	Send(t *autograd.Tensor, to int) error
	// Recv overwrites t (contiguous) with what rank from Sends.
	Recv(t *autograd.Tensor, from int) error
	// SendRecv sends send to rank to and receives recv from rank from,
	// both at once (MPI_Sendrecv): neither waits for the other to finish.
	SendRecv(send *autograd.Tensor, to int, recv *autograd.Tensor, from int) error
}
