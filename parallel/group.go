package parallel

import (
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/headroom-ml/headroom/autograd"
	"github.com/headroom-ml/headroom/dtype"
)

// AbortError is what every collective returns once a rank has called
// Abort: it names that rank and wraps its error (errors.As finds an
// out-of-memory error of another rank through it).
type AbortError struct {
	// Rank is the rank that called Abort.
	Rank int
	// Err is the error it passed.
	Err error
}

// Error names the failed rank and the first line of its error.
func (e *AbortError) Error() string {
	msg, _, _ := strings.Cut(e.Err.Error(), "\n")
	return fmt.Sprintf("parallel: the group was aborted because rank %d failed: %s", e.Rank, msg)
}

// Unwrap returns the failed rank's error.
func (e *AbortError) Unwrap() error { return e.Err }

// NewGroup returns the communicators of n ranks that run as goroutines of
// this process, one per rank, in rank order. Data moves through host
// memory: each collective splits its work evenly between the ranks, which
// copy and reduce the other ranks' buffers directly (no staging copies, no
// device memory). Reductions add in rank order (rank 0 + rank 1 + …) in
// F32 for F32, F16 and BF16 and in F64 for F64, so that every rank gets the
// same bits on every run; Avg divides the sum by n. Tensors may live on any
// host-addressable device (each rank on its own); on meta devices the
// collectives synchronise and move nothing.
func NewGroup(n int) []Communicator {
	if n < 1 {
		panic(fmt.Sprintf("parallel.NewGroup: %d ranks, want ≥ 1", n))
	}
	g := &group{n: n, posts: make([]post, n)}
	g.cond.L = &g.mu
	cs := make([]Communicator, n)
	for r := range n {
		cs[r] = &local{g: g, rank: r, scratch: newScratch()}
	}
	return cs
}

// group is the state the ranks of one in-process group share.
type group struct {
	n       int
	mu      sync.Mutex
	cond    sync.Cond
	arrived int    // ranks waiting at the current barrier
	gen     uint64 // barriers passed
	err     error  // set by Abort
	gone    error  // set when a rank's function returned from Run
	posts   []post // what each rank passed to the current collective
}

// post is one rank's part of a collective: its buffers as host bytes.
type post struct {
	kind     string
	dt       dtype.DType
	a, b     []byte // t (all_reduce, broadcast) or src; dst
	na, nb   int    // elements of a and b
	op       Op
	root     int
	host     bool // the buffers hold data (not meta)
	aliasDst bool // all_gather: src is dst's own slot
}

// local is one rank's Communicator.
type local struct {
	g       *group
	rank    int
	scratch *scratch
}

func (c *local) Rank() int { return c.rank }
func (c *local) Size() int { return c.g.n }

// Abort makes every pending and future collective of every rank return an
// *AbortError naming this rank and wrapping err. The first Abort wins.
func (c *local) Abort(err error) {
	if err == nil {
		err = errors.New("aborted")
	}
	g := c.g
	g.mu.Lock()
	if g.err == nil {
		g.err = &AbortError{Rank: c.rank, Err: err}
	}
	g.cond.Broadcast()
	g.mu.Unlock()
}

// enter posts p and waits for every rank to post: the rendezvous of a
// collective. It fails when the group is aborted before all have come.
func (c *local) enter(p post) error {
	g := c.g
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.err != nil {
		return g.err
	}
	if g.gone != nil {
		return fmt.Errorf("%w (rank %d called %s)", g.gone, c.rank, p.kind)
	}
	g.posts[c.rank] = p
	gen := g.gen
	if g.arrived++; g.arrived == g.n {
		g.arrived, g.gen = 0, g.gen+1
		g.cond.Broadcast()
		return nil
	}
	for g.gen == gen && g.err == nil && g.gone == nil {
		g.cond.Wait()
	}
	if g.gen != gen {
		return nil
	}
	g.arrived--
	if g.err != nil {
		return g.err
	}
	return fmt.Errorf("%w (rank %d called %s)", g.gone, c.rank, p.kind)
}

// leave records that this rank's function returned from Run: a collective
// needs every rank, so the others' pending and future collectives fail
// instead of waiting for it forever.
func (c *local) leave() {
	g := c.g
	g.mu.Lock()
	if g.gone == nil {
		g.gone = fmt.Errorf("parallel: rank %d has returned from Run: every rank must call the same collectives (a ZeRO-3 model that one rank evaluates must be gathered by all first: DDP.Unshard)", c.rank)
	}
	g.cond.Broadcast()
	g.mu.Unlock()
}

// sync is a barrier between the phases of a collective that every rank
// has entered: all of them reach it (their work in between never blocks),
// so it ignores Abort — which also guarantees that no rank returns while
// another still reads its buffers.
func (c *local) sync() {
	g := c.g
	g.mu.Lock()
	defer g.mu.Unlock()
	gen := g.gen
	if g.arrived++; g.arrived == g.n {
		g.arrived, g.gen = 0, g.gen+1
		g.cond.Broadcast()
		return
	}
	for g.gen == gen {
		g.cond.Wait()
	}
}

// collective runs one collective: rendezvous, a check that every rank
// called the same thing, work (phases separated by sync), and a final
// sync so that no rank posts the next collective while another still
// reads this one's posts.
func (c *local) collective(p post, work func(ps []post)) error {
	if err := c.enter(p); err != nil {
		return err
	}
	ps := c.g.posts
	err := check(ps)
	if err == nil && ps[0].host {
		work(ps)
	}
	c.sync()
	return err
}

// check verifies that every rank posted the same collective with matching
// buffers; every rank computes the same answer.
func check(ps []post) error {
	p0 := ps[0]
	for r, p := range ps {
		switch {
		case p.kind != p0.kind:
			return fmt.Errorf("parallel: rank %d called %s while rank 0 called %s: every rank must call the same collectives in the same order", r, p.kind, p0.kind)
		case p.dt != p0.dt || p.na != p0.na || p.nb != p0.nb:
			return fmt.Errorf("parallel: %s: rank %d passed %s tensors of %d and %d elements, rank 0 %s of %d and %d: every rank must pass the same shapes and dtype",
				p.kind, r, p.dt, p.na, p.nb, p0.dt, p0.na, p0.nb)
		case p.op != p0.op || p.root != p0.root:
			return fmt.Errorf("parallel: %s: rank %d passed op %d root %d, rank 0 op %d root %d", p.kind, r, p.op, p.root, p0.op, p0.root)
		case p.host != p0.host:
			return fmt.Errorf("parallel: %s: rank %d's tensors hold data and rank 0's do not (or the reverse): mix no meta and cpu devices", p.kind, r)
		}
	}
	return nil
}

// bytesOf checks t for a collective and returns its elements' host bytes
// (nil on a device without host memory).
func bytesOf(kind, what string, t *autograd.Tensor) ([]byte, error) {
	switch {
	case t == nil || t.Released():
		return nil, fmt.Errorf("parallel: %s: %s is nil or released", kind, what)
	case !t.IsContiguous():
		return nil, fmt.Errorf("parallel: %s: %s %v with strides %v is not contiguous", kind, what, t.Shape(), t.Strides())
	}
	switch t.DType() {
	case dtype.F64, dtype.F32, dtype.BF16, dtype.F16:
	default:
		return nil, fmt.Errorf("parallel: %s: %s has dtype %s, want f64, f32, bf16 or f16", kind, what, t.DType())
	}
	b := t.Block().Bytes()
	if b == nil {
		return nil, nil
	}
	es := t.DType().Size()
	return b[t.Offset()*es : (t.Offset()+t.Len())*es], nil
}

// split returns rank r's share [lo, hi) of n elements cut into parts
// pieces that start at multiples of 64 elements (whole cache lines).
func split(n, parts, r int) (lo, hi int) {
	per := (n + parts - 1) / parts
	per = (per + 63) &^ 63
	lo, hi = min(r*per, n), min((r+1)*per, n)
	return lo, hi
}

func (c *local) AllReduce(t *autograd.Tensor, op Op) error {
	a, err := bytesOf("all_reduce", "tensor", t)
	if err != nil {
		return err
	}
	if op != Sum && op != Avg {
		return fmt.Errorf("parallel: all_reduce: unknown op %d", op)
	}
	p := post{kind: "all_reduce", dt: t.DType(), a: a, na: t.Len(), op: op, host: a != nil}
	es := t.DType().Size()
	err = c.collective(p, func(ps []post) {
		// Each rank reduces its share of every rank's tensor into its own,
		// then copies the other shares from their owners.
		lo, hi := split(p.na, c.g.n, c.rank)
		ins := make([][]byte, len(ps))
		for r, q := range ps {
			ins[r] = q.a[lo*es : hi*es]
		}
		c.scratch.reduce(p.dt, op, a[lo*es:hi*es], ins)
		c.sync()
		for r, q := range ps {
			if r != c.rank {
				lo, hi := split(p.na, c.g.n, r)
				copy(a[lo*es:hi*es], q.a[lo*es:hi*es])
			}
		}
	})
	if err == nil {
		t.Block().Bump()
	}
	return err
}

func (c *local) ReduceScatter(dst, src *autograd.Tensor, op Op) error {
	a, err := bytesOf("reduce_scatter", "src", src)
	if err != nil {
		return err
	}
	b, err := bytesOf("reduce_scatter", "dst", dst)
	if err != nil {
		return err
	}
	n := dst.Len()
	switch {
	case op != Sum && op != Avg:
		return fmt.Errorf("parallel: reduce_scatter: unknown op %d", op)
	case src.Len() != c.g.n*n || src.DType() != dst.DType():
		return fmt.Errorf("parallel: reduce_scatter: src %v %s for dst %v %s on %d ranks: want %d·%d elements of dst's dtype",
			src.Shape(), src.DType(), dst.Shape(), dst.DType(), c.g.n, c.g.n, n)
	}
	p := post{kind: "reduce_scatter", dt: dst.DType(), a: a, b: b, na: src.Len(), nb: n, op: op, host: a != nil}
	es := dst.DType().Size()
	err = c.collective(p, func(ps []post) {
		ins := make([][]byte, len(ps))
		for r, q := range ps {
			ins[r] = q.a[c.rank*n*es : (c.rank+1)*n*es]
		}
		c.scratch.reduce(p.dt, op, b, ins)
	})
	if err == nil {
		dst.Block().Bump()
	}
	return err
}

func (c *local) AllGather(dst, src *autograd.Tensor) error {
	a, err := bytesOf("all_gather", "src", src)
	if err != nil {
		return err
	}
	b, err := bytesOf("all_gather", "dst", dst)
	if err != nil {
		return err
	}
	n := src.Len()
	if dst.Len() != c.g.n*n || src.DType() != dst.DType() {
		return fmt.Errorf("parallel: all_gather: dst %v %s for src %v %s on %d ranks: want %d·%d elements of src's dtype",
			dst.Shape(), dst.DType(), src.Shape(), src.DType(), c.g.n, c.g.n, n)
	}
	es := src.DType().Size()
	alias := a != nil && n > 0 && &a[0] == &b[c.rank*n*es]
	p := post{kind: "all_gather", dt: src.DType(), a: a, b: b, na: n, nb: dst.Len(), host: a != nil, aliasDst: alias}
	err = c.collective(p, func(ps []post) {
		for r, q := range ps {
			if r != c.rank || !alias {
				copy(b[r*n*es:(r+1)*n*es], q.a)
			}
		}
	})
	if err == nil {
		dst.Block().Bump()
	}
	return err
}

func (c *local) Broadcast(t *autograd.Tensor, root int) error {
	a, err := bytesOf("broadcast", "tensor", t)
	if err != nil {
		return err
	}
	if root < 0 || root >= c.g.n {
		return fmt.Errorf("parallel: broadcast: root %d out of range for %d ranks", root, c.g.n)
	}
	p := post{kind: "broadcast", dt: t.DType(), a: a, na: t.Len(), root: root, host: a != nil}
	err = c.collective(p, func(ps []post) {
		if c.rank != root {
			copy(a, ps[root].a)
		}
	})
	if err == nil && c.rank != root {
		t.Block().Bump()
	}
	return err
}

func (c *local) Barrier() error {
	return c.collective(post{kind: "barrier"}, func([]post) {})
}
