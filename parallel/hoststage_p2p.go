package parallel

import (
	"fmt"

	"github.com/headroom-ml/headroom/autograd"
	"github.com/headroom-ml/headroom/device"
)

// HostStaged's point-to-point transfers, for an inner communicator that
// has them (MPI): a tensor without host memory goes in rounds of at most
// StageBytes through a host tensor (tag communication, freed when the
// call returns), each round one inner Send, Recv or SendRecv; a host
// tensor goes whole, in one. Both sides must pass tensors of the same
// kind of device, so that their rounds pair up.

var _ PointToPoint = (*hostStaged)(nil)

// Send sends t to rank to through inner's Send.
func (s *hostStaged) Send(t *autograd.Tensor, to int) error {
	return s.transfer("send", &side{t: t, peer: to}, nil)
}

// Recv receives t from rank from through inner's Recv.
func (s *hostStaged) Recv(t *autograd.Tensor, from int) error {
	return s.transfer("recv", nil, &side{t: t, peer: from})
}

// SendRecv sends send and receives recv, round by round through inner's
// SendRecv (its Send or Recv once one side has no rounds left).
func (s *hostStaged) SendRecv(send *autograd.Tensor, to int, recv *autograd.Tensor, from int) error {
	return s.transfer("sendrecv", &side{t: send, peer: to}, &side{t: recv, peer: from})
}

// side is one tensor of a transfer and how it goes in rounds.
type side struct {
	t     *autograd.Tensor
	peer  int
	b     buf
	m     int              // elements per round
	h     *autograd.Tensor // the host tensor of a staged side
	lo    int              // the next round's first element
	begun bool
}

// more reports whether the side has a round left (a tensor of 0 elements
// has one).
func (d *side) more() bool { return d != nil && (!d.begun || d.lo < d.t.Len()) }

// open checks the side and makes its host tensor when it is staged.
func (s *hostStaged) open(kind string, d *side) error {
	if d == nil {
		return nil
	}
	b, err := bufOf(kind, "tensor", d.t)
	if err != nil {
		return err
	}
	d.b, d.m = b, max(d.t.Len(), 1)
	if !b.staged() {
		return nil
	}
	d.m = perRound(d.t.Len(), b.es, 1)
	return autograd.Try(func() {
		d.h = autograd.New(s.host, d.t.DType(), device.Communication, d.m)
		d.h.Block().Relabel("stage "+kind, "")
	})
}

// round returns the tensor of the side's next round (the tensor itself
// when it is not staged, else a view of the host tensor) and its range.
func (d *side) round() (v *autograd.Tensor, lo, hi int) {
	lo, hi = d.lo, min(d.lo+d.m, d.t.Len())
	d.lo, d.begun = hi, true
	if d.h == nil {
		return d.t, lo, hi
	}
	return view(d.h, 0, []int{hi - lo}), lo, hi
}

// transfer runs a send, a receive or both in rounds.
func (s *hostStaged) transfer(kind string, out, in *side) error {
	p, ok := s.Communicator.(PointToPoint)
	if !ok {
		return fmt.Errorf("parallel: %s: communicator %T has no point-to-point transfers (PointToPoint)", kind, s.Communicator)
	}
	defer func() {
		for _, d := range []*side{out, in} {
			if d != nil && d.h != nil {
				d.h.Release()
			}
		}
	}()
	if err := s.open(kind, out); err != nil {
		return err
	}
	if err := s.open(kind, in); err != nil {
		return err
	}
	for out.more() || in.more() {
		if err := s.transferRound(kind, p, out, in); err != nil {
			return err
		}
	}
	if in != nil && in.h != nil {
		in.t.Block().Bump()
	}
	return nil
}

// transferRound moves one round of each side that has one left.
func (s *hostStaged) transferRound(kind string, p PointToPoint, out, in *side) error {
	var sv, rv *autograd.Tensor
	var rlo, rhi int
	if out.more() {
		v, lo, hi := out.round()
		if out.h != nil {
			defer v.Release()
			if err := copyIn(v, out.b, lo, hi); err != nil {
				return s.abort(kind, err)
			}
		}
		sv = v
	}
	if in.more() {
		rv, rlo, rhi = in.round()
		if in.h != nil {
			defer rv.Release()
		}
	}
	var err error
	switch {
	case sv != nil && rv != nil:
		err = p.SendRecv(sv, out.peer, rv, in.peer)
	case sv != nil:
		err = p.Send(sv, out.peer)
	default:
		err = p.Recv(rv, in.peer)
	}
	if err != nil {
		return err
	}
	if rv != nil && in.h != nil {
		if err := copyOut(in.b, rlo, rhi, rv); err != nil {
			return s.abort(kind, err)
		}
	}
	return nil
}
