package parallel

import (
	"errors"
	"fmt"
	"strings"
	"sync"

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
// copy and reduce the other ranks' buffers directly (no device memory).
// Reductions add in rank order (rank 0 + rank 1 + …) in F32 for F32, F16
// and BF16 and in F64 for F64, so that every rank gets the same bits on
// every run; Avg divides the sum by n. Each rank's tensors may live on
// its own device: a host-addressable one (cpu) is read and written in
// place; one without host memory (cuda) is staged through at most
// StageBytes of host scratch per rank, in rounds (see StageBytes), so
// cpu and cuda ranks may be mixed in one group. On meta devices (every
// rank's) the collectives synchronise and move nothing.
func NewGroup(n int) []Communicator {
	if n < 1 {
		panic(fmt.Sprintf("parallel.NewGroup: %d ranks, want ≥ 1", n))
	}
	g := newGroup(n)
	cs := make([]Communicator, n)
	for r, l := range g.ranks {
		cs[r] = l
	}
	return cs
}

// newGroup makes an in-process group of n ranks.
func newGroup(n int) *group {
	g := &group{n: n, posts: make([]post, n), mail: map[[2]int]*letter{}, left: make([]bool, n)}
	g.cond.L = &g.mu
	for r := range n {
		g.ranks = append(g.ranks, &local{g: g, rank: r, world: r, scratch: newScratch()})
	}
	return g
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
	ranks   []*local
	dom     *domain // the mesh whose groups fail together (nil: this group alone)
	failure error   // the first rank's error in the collective ending now
	result  error   // the failure of the collective that ended last
	// point to point (p2p.go)
	mail map[[2]int]*letter // the pending send from rank [0] to rank [1]
	left []bool             // the ranks whose function returned from Run
}

// post is one rank's part of a collective: its buffers.
type post struct {
	kind   string
	dt     dtype.DType
	a, b   buf // t (all_reduce, broadcast) or src; dst
	na, nb int // elements of a and b
	op     Op
	root   int
	data   bool // the buffers hold data (not meta)
}

// local is one rank's Communicator.
type local struct {
	g       *group
	rank    int
	world   int // the rank in the mesh's world group (rank outside a mesh)
	scratch *scratch
	host    []byte   // staging of tensors without host memory (StageBytes at most)
	parts   [][]byte // what this rank offers the others in the current round
	failed  error    // this rank's device copy failure in the current collective
}

func (c *local) Rank() int { return c.rank }
func (c *local) Size() int { return c.g.n }

// Abort makes every pending and future collective of every rank return an
// *AbortError naming this rank and wrapping err. The first Abort wins. A
// rank that fails because another's Abort reached it (err wraps an
// *AbortError) passes that one on, so that every group of a failure
// domain names the rank that failed first, whichever group the abort
// reaches first.
func (c *local) Abort(err error) {
	if err == nil {
		err = errors.New("aborted")
	}
	ae := &AbortError{Rank: c.world, Err: err}
	var cause *AbortError
	if errors.As(err, &cause) {
		ae = cause
	}
	if c.g.dom == nil {
		c.g.abort(ae)
		return
	}
	for _, g := range c.g.dom.groups {
		g.abort(ae)
	}
}

// abort fails the group's pending and future collectives with err, unless
// an earlier Abort already did.
func (g *group) abort(err *AbortError) {
	g.mu.Lock()
	if g.err == nil {
		g.err = err
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
	if c.g.dom == nil {
		c.leaveGroup()
		return
	}
	for _, l := range c.g.dom.ranks[c.world] {
		l.leaveGroup()
	}
}

// leaveGroup records that this rank has left its own group.
func (c *local) leaveGroup() {
	g := c.g
	g.mu.Lock()
	g.left[c.rank] = true
	if g.gone == nil {
		g.gone = fmt.Errorf("parallel: rank %d has returned from Run: every rank must call the same collectives (a ZeRO-3 model that one rank evaluates must be gathered by all first: DDP.Unshard)", c.world)
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

// finish is the collective's last barrier: it also tells every rank
// whether a rank's device copies failed, so that all of them fail the
// collective (the failure of the first rank to report one).
func (c *local) finish(failed error) error {
	g := c.g
	g.mu.Lock()
	defer g.mu.Unlock()
	if failed != nil && g.failure == nil {
		g.failure = fmt.Errorf("parallel: rank %d: %w", c.rank, failed)
	}
	gen := g.gen
	if g.arrived++; g.arrived == g.n {
		g.arrived, g.gen = 0, g.gen+1
		g.result, g.failure = g.failure, nil
		g.cond.Broadcast()
		return g.result
	}
	for g.gen == gen {
		g.cond.Wait()
	}
	// No later collective ends before this rank has joined it: result is
	// still this one's.
	return g.result
}

// collective runs one collective: rendezvous, a check that every rank
// called the same thing, work (phases separated by sync), and a final
// barrier so that no rank posts the next collective while another still
// reads this one's posts or staging.
func (c *local) collective(p post, work func(ps []post)) error {
	if err := c.enter(p); err != nil {
		return err
	}
	ps := c.g.posts
	err := check(ps)
	c.failed = nil
	if err == nil && ps[0].data {
		work(ps)
	}
	if ferr := c.finish(c.failed); err == nil {
		err = ferr
	}
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
		case p.data != p0.data:
			return fmt.Errorf("parallel: %s: rank %d's tensors hold data and rank 0's do not (or the reverse): mix no meta devices with devices that hold data", p.kind, r)
		}
	}
	return nil
}
