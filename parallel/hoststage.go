package parallel

import (
	"fmt"

	"github.com/headroom-ml/headroom/autograd"
	"github.com/headroom-ml/headroom/device"
)

// HostStaged returns a communicator that runs inner's collectives — a
// communicator whose tensors must be host memory, such as the MPI one —
// on tensors of devices without host memory (cuda): each collective is
// cut into rounds that copy at most StageBytes of the tensors into
// tensors on host (tag communication, freed when the collective returns)
// with the device's Kernels.Read, run inner's collective on them and copy
// the result back with Kernels.Write. Tensors with host memory go to inner
// unchanged. Every rank must wrap its communicator alike and pass tensors
// of the same kind of device (the rounds are the same on every rank only
// then). A failed copy aborts inner, so that no rank waits for this one.
func HostStaged(inner Communicator, host *device.Device) Communicator {
	return &hostStaged{Communicator: inner, host: host}
}

// hostStaged is HostStaged's communicator.
type hostStaged struct {
	Communicator
	host *device.Device
}

// onDevice reports whether t needs staging.
func onDevice(ts ...*autograd.Tensor) bool {
	for _, t := range ts {
		if t != nil && !t.Released() && t.Block().Bytes() == nil && t.Device().Kernels() != nil {
			return true
		}
	}
	return false
}

// staged checks ts and runs f, which copies them through host tensors of
// elements elements each (allocated here, in ts[0]'s dtype) and runs
// inner collectives.
func (s *hostStaged) staged(kind string, ts []*autograd.Tensor, elements []int, f func(h []*autograd.Tensor, b []buf) error) error {
	var bs []buf
	for _, t := range ts {
		b, err := bufOf(kind, "tensor", t)
		if err != nil {
			return err
		}
		bs = append(bs, b)
	}
	t := ts[0]
	var hs []*autograd.Tensor
	defer func() {
		for _, h := range hs {
			h.Release()
		}
	}()
	err := autograd.Try(func() {
		for _, n := range elements {
			h := autograd.New(s.host, t.DType(), device.Communication, n)
			h.Block().Relabel("stage "+kind, "")
			hs = append(hs, h)
		}
	})
	if err == nil {
		err = f(hs, bs)
	}
	return err
}

// copyIn reads elements [lo, hi) of b into h's first hi−lo elements.
func copyIn(h *autograd.Tensor, b buf, lo, hi int) error {
	return autograd.Try(func() {
		hb := h.Block().Bytes()[h.Offset()*b.es:]
		b.k.Read(hb[:(hi-lo)*b.es], b.part(lo, hi))
	})
}

// copyOut writes h's first hi−lo elements into elements [lo, hi) of b.
func copyOut(b buf, lo, hi int, h *autograd.Tensor) error {
	return autograd.Try(func() {
		hb := h.Block().Bytes()[h.Offset()*b.es:]
		b.k.Write(b.part(lo, hi), hb[:(hi-lo)*b.es])
	})
}

// abort ends a round whose copy failed: every rank's collectives fail.
func (s *hostStaged) abort(kind string, err error) error {
	err = fmt.Errorf("parallel: %s: staging rank %d's tensor through %s: %w", kind, s.Rank(), s.host, err)
	s.Abort(err)
	return err
}

// perRound returns the elements of a round in which parts pieces of
// elements of es bytes are staged.
func perRound(n, es, parts int) int { return min(n, max(stageBytes/(parts*es), 1)) }

func (s *hostStaged) AllReduce(t *autograd.Tensor, op Op) error {
	if !onDevice(t) {
		return s.Communicator.AllReduce(t, op)
	}
	return s.inRounds("all_reduce", t, true, true, func(v *autograd.Tensor) error { return s.Communicator.AllReduce(v, op) })
}

func (s *hostStaged) Broadcast(t *autograd.Tensor, root int) error {
	if !onDevice(t) {
		return s.Communicator.Broadcast(t, root)
	}
	me := s.Rank() == root
	return s.inRounds("broadcast", t, me, !me, func(v *autograd.Tensor) error { return s.Communicator.Broadcast(v, root) })
}

// inRounds runs the collective coll of one tensor t in rounds of a host
// tensor: each round's elements are read into it when in, coll runs on
// it, and they are written back when out.
func (s *hostStaged) inRounds(kind string, t *autograd.Tensor, in, out bool, coll func(v *autograd.Tensor) error) error {
	n := t.Len()
	m := perRound(n, t.DType().Size(), 1)
	return s.staged(kind, []*autograd.Tensor{t}, []int{m}, func(h []*autograd.Tensor, bs []buf) error {
		for lo := 0; lo < n; lo += m {
			hi := min(lo+m, n)
			v := view(h[0], 0, []int{hi - lo})
			err := s.round(kind, v, bs[0], lo, hi, in, out, coll)
			v.Release()
			if err != nil {
				return err
			}
		}
		if out {
			t.Block().Bump()
		}
		return nil
	})
}

// round is one round of inRounds on v, elements [lo, hi) of b.
func (s *hostStaged) round(kind string, v *autograd.Tensor, b buf, lo, hi int, in, out bool, coll func(v *autograd.Tensor) error) error {
	if in {
		if err := copyIn(v, b, lo, hi); err != nil {
			return s.abort(kind, err)
		}
	}
	if err := coll(v); err != nil {
		return err
	}
	if out {
		if err := copyOut(b, lo, hi, v); err != nil {
			return s.abort(kind, err)
		}
	}
	return nil
}

func (s *hostStaged) ReduceScatter(dst, src *autograd.Tensor, op Op) error {
	if !onDevice(dst, src) {
		return s.Communicator.ReduceScatter(dst, src, op)
	}
	N, n := s.Size(), dst.Len()
	if src.Len() != N*n || src.DType() != dst.DType() {
		return s.Communicator.ReduceScatter(dst, src, op) // its error
	}
	m := perRound(n, dst.DType().Size(), N+1)
	return s.staged("reduce_scatter", []*autograd.Tensor{src, dst}, []int{N * m, m}, func(h []*autograd.Tensor, bs []buf) error {
		for lo := 0; lo < n; lo += m {
			hi := min(lo+m, n)
			if err := s.scatterRound(h, bs, op, n, lo, hi); err != nil {
				return err
			}
		}
		dst.Block().Bump()
		return nil
	})
}

// scatterRound reduce-scatters elements [lo, hi) of every rank's slot of
// src (bs[0], slots of n) into dst (bs[1]) through h[0] (N slots of
// hi−lo) and h[1].
func (s *hostStaged) scatterRound(h []*autograd.Tensor, bs []buf, op Op, n, lo, hi int) error {
	N, k := s.Size(), hi-lo
	hs, hd := view(h[0], 0, []int{N * k}), view(h[1], 0, []int{k})
	defer hs.Release()
	defer hd.Release()
	for r := range N {
		v := view(hs, r*k, []int{k})
		err := copyIn(v, bs[0], r*n+lo, r*n+hi)
		v.Release()
		if err != nil {
			return s.abort("reduce_scatter", err)
		}
	}
	if err := s.Communicator.ReduceScatter(hd, hs, op); err != nil {
		return err
	}
	if err := copyOut(bs[1], lo, hi, hd); err != nil {
		return s.abort("reduce_scatter", err)
	}
	return nil
}

func (s *hostStaged) AllGather(dst, src *autograd.Tensor) error {
	if !onDevice(dst, src) {
		return s.Communicator.AllGather(dst, src)
	}
	N, n := s.Size(), src.Len()
	if dst.Len() != N*n || src.DType() != dst.DType() {
		return s.Communicator.AllGather(dst, src) // its error
	}
	m := perRound(n, src.DType().Size(), N+1)
	return s.staged("all_gather", []*autograd.Tensor{src, dst}, []int{m, N * m}, func(h []*autograd.Tensor, bs []buf) error {
		for lo := 0; lo < n; lo += m {
			hi := min(lo+m, n)
			if err := s.gatherRound(h, bs, n, lo, hi); err != nil {
				return err
			}
		}
		dst.Block().Bump()
		return nil
	})
}

// gatherRound all-gathers elements [lo, hi) of src (bs[0]) into every
// rank's slot of dst (bs[1], slots of n) through h[0] and h[1] (N slots
// of hi−lo). A gather in place rewrites the rank's own slot with its own
// values.
func (s *hostStaged) gatherRound(h []*autograd.Tensor, bs []buf, n, lo, hi int) error {
	N, k := s.Size(), hi-lo
	hs, hd := view(h[0], 0, []int{k}), view(h[1], 0, []int{N * k})
	defer hs.Release()
	defer hd.Release()
	if err := copyIn(hs, bs[0], lo, hi); err != nil {
		return s.abort("all_gather", err)
	}
	if err := s.Communicator.AllGather(hd, hs); err != nil {
		return err
	}
	for r := range N {
		v := view(hd, r*k, []int{k})
		err := copyOut(bs[1], r*n+lo, r*n+hi, v)
		v.Release()
		if err != nil {
			return s.abort("all_gather", err)
		}
	}
	return nil
}
