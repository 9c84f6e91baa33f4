package parallel

import (
	"fmt"

	"github.com/headroom-ml/headroom/autograd"
)

// The in-process group's point-to-point transfers. A Send posts a letter
// (its tensor's host bytes) in the mailbox of its (from, to) pair and
// waits; the matching Recv claims it, copies the bytes outside the lock
// and marks it taken, which releases the sender. Nothing is copied twice
// and nothing is allocated: the receiver reads the sender's memory.

var _ PointToPoint = (*local)(nil)

// letter is one pending send.
type letter struct {
	b       buf
	n       int    // elements
	dt      string // dtype, for errors
	claimed bool   // a receiver is copying it
	taken   bool   // the receiver is done with it
	err     error  // a mismatch the receiver found, for the sender too
}

// Send copies t to rank to's matching Recv; it returns when the receiver
// has copied it.
func (c *local) Send(t *autograd.Tensor, to int) error {
	l, err := c.post("send", t, to)
	if err != nil {
		return err
	}
	return c.await(l, to)
}

// Recv overwrites t with rank from's matching Send.
func (c *local) Recv(t *autograd.Tensor, from int) error {
	b, err := c.p2pBuf("recv", t, from)
	if err != nil {
		return err
	}
	return c.take(b, t, from)
}

// SendRecv posts send, receives recv, then waits for send to be taken.
func (c *local) SendRecv(send *autograd.Tensor, to int, recv *autograd.Tensor, from int) error {
	b, err := c.p2pBuf("sendrecv", recv, from)
	if err != nil {
		return err
	}
	l, err := c.post("sendrecv", send, to)
	if err != nil {
		return err
	}
	rerr := c.take(b, recv, from)
	if err := c.await(l, to); rerr == nil {
		rerr = err
	}
	return rerr
}

// p2pBuf checks a point-to-point tensor and its peer.
func (c *local) p2pBuf(kind string, t *autograd.Tensor, peer int) (buf, error) {
	if peer < 0 || peer >= c.g.n || peer == c.rank {
		return buf{}, fmt.Errorf("parallel: %s: rank %d names peer %d: want another rank in [0, %d)", kind, c.rank, peer, c.g.n)
	}
	b, err := bufOf(kind, "tensor", t)
	if err == nil && b.staged() {
		err = fmt.Errorf("parallel: %s: tensor %v is on %s, which has no host memory: the in-process group moves point-to-point tensors through host memory only", kind, t.Shape(), t.Device().Name())
	}
	return b, err
}

// post puts t in the mailbox to rank to.
func (c *local) post(kind string, t *autograd.Tensor, to int) (*letter, error) {
	b, err := c.p2pBuf(kind, t, to)
	if err != nil {
		return nil, err
	}
	g := c.g
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.err != nil {
		return nil, g.err
	}
	key := [2]int{c.rank, to}
	if g.mail[key] != nil {
		return nil, fmt.Errorf("parallel: %s: rank %d already has a send to rank %d pending: a rank's communicator is used by one goroutine at a time", kind, c.rank, to)
	}
	l := &letter{b: b, n: t.Len(), dt: t.DType().String()}
	g.mail[key] = l
	g.cond.Broadcast()
	return l, nil
}

// await waits until the receiver has taken l, or fails when the group is
// aborted or rank to has returned from Run first (never while the
// receiver is copying from l).
func (c *local) await(l *letter, to int) error {
	g := c.g
	g.mu.Lock()
	defer g.mu.Unlock()
	for !l.taken && (l.claimed || g.err == nil && !g.left[to]) {
		g.cond.Wait()
	}
	if l.taken {
		return l.err
	}
	delete(g.mail, [2]int{c.rank, to})
	if g.err != nil {
		return g.err
	}
	return fmt.Errorf("parallel: send: rank %d has returned from Run without receiving rank %d's tensor", to, c.rank)
}

// take waits for rank from's letter, copies it into b and marks it taken.
func (c *local) take(b buf, t *autograd.Tensor, from int) error {
	g := c.g
	key := [2]int{from, c.rank}
	g.mu.Lock()
	for g.mail[key] == nil && g.err == nil && !g.left[from] {
		g.cond.Wait()
	}
	l := g.mail[key]
	switch {
	case g.err != nil:
		g.mu.Unlock()
		return g.err
	case l == nil:
		g.mu.Unlock()
		return fmt.Errorf("parallel: recv: rank %d has returned from Run without sending to rank %d", from, c.rank)
	}
	delete(g.mail, key)
	if l.n != t.Len() || l.dt != t.DType().String() {
		l.err = fmt.Errorf("parallel: rank %d sent %d elements of %s to rank %d, which receives %d of %s: both sides must agree", from, l.n, l.dt, c.rank, t.Len(), t.DType())
		l.taken = true
		g.cond.Broadcast()
		g.mu.Unlock()
		return l.err
	}
	l.claimed = true
	g.mu.Unlock()
	if b.host != nil && l.b.host != nil {
		copy(b.host, l.b.host)
	}
	t.Block().Bump()
	g.mu.Lock()
	l.taken, l.claimed = true, false
	g.cond.Broadcast()
	g.mu.Unlock()
	return nil
}
