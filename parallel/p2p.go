package parallel

import (
	"fmt"

	"github.com/headroom-ml/headroom/autograd"
	"github.com/headroom-ml/headroom/dtype"
)

// The in-process group's point-to-point transfers. A send posts letters
// in the mailbox of its (from, to) pair, one round at a time: a host
// tensor (cpu) in one round of its own bytes; a tensor without host memory
// (cuda) in rounds of at most StageBytes read into the sender's staging
// slice (the collectives' slice: StageBytes per cuda rank, see
// StageBytes). The receiver claims each letter, copies it into its tensor
// outside the lock (a host copy, or the device's Write) and marks it
// taken, which lets the sender post the next round. Nothing else is
// allocated.

var _ PointToPoint = (*local)(nil)

// letter is one round of a send: elements [lo, hi) of the sender's n.
type letter struct {
	bytes   []byte // the sender's host memory, or its staging slice
	lo, hi  int
	n       int
	dt      dtype.DType
	claimed bool  // a receiver is copying it
	taken   bool  // the receiver is done with it
	err     error // what the receiver found wrong, for the sender too
}

// outgoing is a send in progress.
type outgoing struct {
	b      buf
	to, n  int
	dt     dtype.DType
	next   int     // the first element not posted yet
	posted bool    // a round has been posted (a tensor of 0 elements has one)
	cur    *letter // the round posted and not yet taken
}

func (o *outgoing) done() bool { return o == nil || o.posted && o.cur == nil && o.next >= o.n }

// incoming is a receive in progress.
type incoming struct {
	t        *autograd.Tensor
	b        buf
	from, n  int
	dt       dtype.DType
	got      int  // elements received
	received bool // a round has arrived
}

func (in *incoming) done() bool { return in == nil || in.received && in.got >= in.n }

// Send copies t to rank to's matching Recv; it returns when the receiver
// has copied it.
func (c *local) Send(t *autograd.Tensor, to int) error {
	o, err := c.outgoing("send", t, to)
	if err != nil {
		return err
	}
	return c.transfer(o, nil)
}

// Recv overwrites t with rank from's matching Send.
func (c *local) Recv(t *autograd.Tensor, from int) error {
	in, err := c.incoming("recv", t, from)
	if err != nil {
		return err
	}
	return c.transfer(nil, in)
}

// SendRecv sends send and receives recv at once: rounds of either go as
// soon as they can.
func (c *local) SendRecv(send *autograd.Tensor, to int, recv *autograd.Tensor, from int) error {
	o, err := c.outgoing("sendrecv", send, to)
	if err != nil {
		return err
	}
	in, err := c.incoming("sendrecv", recv, from)
	if err != nil {
		return err
	}
	return c.transfer(o, in)
}

// p2pBuf checks a point-to-point tensor and its peer.
func (c *local) p2pBuf(kind string, t *autograd.Tensor, peer int) (buf, error) {
	if peer < 0 || peer >= c.g.n || peer == c.rank {
		return buf{}, fmt.Errorf("parallel: %s: rank %d names peer %d: want another rank in [0, %d)", kind, c.rank, peer, c.g.n)
	}
	return bufOf(kind, "tensor", t)
}

func (c *local) outgoing(kind string, t *autograd.Tensor, to int) (*outgoing, error) {
	b, err := c.p2pBuf(kind, t, to)
	if err != nil {
		return nil, err
	}
	return &outgoing{b: b, to: to, n: t.Len(), dt: t.DType()}, nil
}

func (c *local) incoming(kind string, t *autograd.Tensor, from int) (*incoming, error) {
	b, err := c.p2pBuf(kind, t, from)
	if err != nil {
		return nil, err
	}
	return &incoming{t: t, b: b, from: from, n: t.Len(), dt: t.DType()}, nil
}

// transfer runs a send, a receive or both to the end: it posts the send's
// rounds and takes the receive's as each becomes possible, and fails
// when the group is aborted or a peer has returned from Run without its
// side (never while a receiver copies from this rank's letter).
func (c *local) transfer(o *outgoing, in *incoming) error {
	g := c.g
	g.mu.Lock()
	defer g.mu.Unlock()
	for {
		if o != nil && o.cur != nil && o.cur.taken {
			if err := o.cur.err; err != nil {
				return err
			}
			o.cur = nil
		}
		if o.done() && in.done() {
			if in != nil && in.b.data() {
				in.t.Block().Bump()
			}
			return nil
		}
		if err := c.stop(o, in); err != nil {
			return err
		}
		progressed, err := c.post(o)
		if err == nil && !progressed {
			progressed, err = c.take(in)
		}
		if err != nil {
			return err
		}
		if !progressed {
			g.cond.Wait()
		}
	}
}

// stop returns why a transfer must end early, withdrawing this rank's
// letter (unless a receiver is copying it: then the transfer waits); nil
// when it goes on. g.mu is held.
func (c *local) stop(o *outgoing, in *incoming) error {
	g := c.g
	var why error
	switch {
	case g.err != nil:
		why = g.err
	case o != nil && !o.done() && g.left[o.to]:
		why = fmt.Errorf("parallel: send: rank %d has returned from Run without receiving rank %d's tensor", o.to, c.rank)
	case in != nil && !in.done() && g.left[in.from] && g.mail[[2]int{in.from, c.rank}] == nil:
		why = fmt.Errorf("parallel: recv: rank %d has returned from Run without sending to rank %d", in.from, c.rank)
	}
	if why == nil || o != nil && o.cur != nil && o.cur.claimed {
		return nil
	}
	if o != nil && o.cur != nil {
		delete(g.mail, [2]int{c.rank, o.to})
		o.cur = nil
	}
	return why
}

// post posts the send's next round when the last one was taken. g.mu is
// held; a staged round is read outside it.
func (c *local) post(o *outgoing) (bool, error) {
	if o == nil || o.cur != nil || o.done() {
		return false, nil
	}
	l := &letter{lo: o.next, hi: o.n, n: o.n, dt: o.dt}
	if o.b.staged() {
		l.hi = min(o.n, o.next+max(stageBytes/o.b.es, 1))
		c.g.mu.Unlock()
		c.failed = nil
		l.bytes = c.load(o.b, l.lo, l.hi, 0)
		c.g.mu.Lock()
		if c.failed != nil {
			return false, fmt.Errorf("parallel: send: rank %d reading its tensor: %w", c.rank, c.failed)
		}
	} else if o.b.host != nil {
		l.bytes = o.b.host
	}
	o.cur, o.next, o.posted = l, l.hi, true
	c.g.mail[[2]int{c.rank, o.to}] = l
	c.g.cond.Broadcast()
	return true, nil
}

// take copies the receive's next round when it has arrived. g.mu is
// held; the copy runs outside it.
func (c *local) take(in *incoming) (bool, error) {
	if in.done() {
		return false, nil
	}
	g := c.g
	key := [2]int{in.from, c.rank}
	l := g.mail[key]
	if l == nil || l.claimed {
		return false, nil
	}
	delete(g.mail, key)
	if l.n != in.n || l.dt != in.dt || l.lo != in.got {
		l.err = fmt.Errorf("parallel: rank %d sent %d elements of %s to rank %d, which receives %d of %s: both sides must agree", in.from, l.n, l.dt, c.rank, in.n, in.dt)
		l.taken = true
		g.cond.Broadcast()
		return false, l.err
	}
	l.claimed = true
	g.mu.Unlock()
	c.failed = nil
	if l.bytes != nil && in.b.data() {
		c.store(in.b, l.lo, l.hi, l.bytes)
	}
	g.mu.Lock()
	l.claimed, l.taken = false, true
	g.cond.Broadcast()
	if c.failed != nil {
		l.err = fmt.Errorf("parallel: recv: rank %d writing its tensor: %w", c.rank, c.failed)
		return false, l.err
	}
	in.got, in.received = l.hi, true
	return true, nil
}
