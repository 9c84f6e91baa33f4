//go:build mpi

package parallel

import (
	"errors"
	"fmt"
	"unsafe"
)

// Abort records err as this rank's failure and returns at once; it may be
// called from any goroutine, also while this rank is in a collective. A
// goroutine it starts joins one collective header as soon as this rank is
// not in a collective: the one the other ranks are waiting in (every
// collective opens with the same header), which then fails on every rank
// with an error naming this rank and err's message (on this rank the error
// wraps err), as does every later collective, at once. If this rank makes
// a collective call or calls Finalize first, that call carries the abort
// instead; either way this rank joins exactly one more header. That header
// first sends every other rank an abort notice (a point-to-point message),
// so that a rank waiting in Send or Recv — not in a collective — joins it
// too.
func (m *MPI) Abort(err error) {
	if err == nil {
		err = errors.New("aborted")
	}
	m.family.abort(err)
}

// abortOne is Abort of this communicator alone.
func (m *MPI) abortOne(err error) {
	m.amu.Lock()
	defer m.amu.Unlock()
	if m.abort == nil && m.settled == nil {
		m.abort = err
		go m.announce()
	}
}

// announce tells the other ranks of a pending abort.
func (m *MPI) announce() {
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.done && m.pendingAbort() {
		var h mpiHeader
		m.exchange("abort", &h, nil)
	}
}

func (m *MPI) pendingAbort() bool {
	m.amu.Lock()
	defer m.amu.Unlock()
	return m.abort != nil
}

// mpiHeader fields: failure codes (a rank+1, 0 for none), then each value of
// the call as the pair (v, -v) so that one MAX reduction yields both its
// maximum and its minimum.
const (
	mpiAborted = iota
	mpiFailed
	mpiKind
	mpiElems     = mpiKind + 2
	mpiDType     = mpiElems + 2
	mpiArg       = mpiDType + 2 // the op of a reduction, the root of a broadcast
	mpiHeaderLen = mpiArg + 2
)

type mpiHeader [mpiHeaderLen]int64

func (h *mpiHeader) set(i int, v int64) { h[i], h[i+1] = v, -v }

// mpiCall is what a collective tells the header.
type mpiCall struct {
	op    string // the collective's name in errors
	kind  int64
	elems int64 // elements per rank
	dtype int64
	arg   int64
}

// exchange runs the header of a collective. local is the error this rank
// met preparing the call (nil when ready). It returns nil when every rank
// is ready for the same call; otherwise the error every rank returns. It
// is called with m.mu held.
func (m *MPI) exchange(op string, h *mpiHeader, local error) error {
	m.amu.Lock()
	aborting := m.abort != nil
	m.amu.Unlock()
	if aborting {
		h[mpiAborted] = int64(m.rank + 1)
		if err := m.notify(); err != nil {
			m.settle(err)
			return err
		}
	}
	if local != nil {
		h[mpiFailed] = int64(m.rank + 1)
	}
	if err := m.maxInt64s(h[:]); err != nil {
		m.settle(err)
		return err
	}
	if r := int(h[mpiAborted]) - 1; r >= 0 {
		m.amu.Lock()
		own := m.abort
		m.amu.Unlock()
		msg, err := m.message(r, own)
		if err == nil {
			err = fmt.Errorf("parallel: mpi: rank %d aborted: %s", r, msg)
			if r == m.rank {
				err = fmt.Errorf("parallel: mpi: rank %d aborted: %w", r, own)
			}
		}
		m.settle(err)
		m.family.abort(err) // the communicators split with this one fail too
		return err
	}
	if r := int(h[mpiFailed]) - 1; r >= 0 {
		msg, err := m.message(r, local)
		if err != nil {
			m.settle(err)
			return err
		}
		if r == m.rank {
			return fmt.Errorf("parallel: mpi %s: rank %d failed: %w", op, r, local)
		}
		return fmt.Errorf("parallel: mpi %s: rank %d failed: %s", op, r, msg)
	}
	return nil
}

// message broadcasts the message of rank r's error (own on rank r).
func (m *MPI) message(r int, own error) (string, error) {
	var b []byte
	if r == m.rank {
		b = []byte(own.Error())
	}
	n := int64(len(b))
	if err := m.bcast("collective", unsafe.Pointer(&n), 8, mpiByte, r); err != nil {
		return "", err
	}
	if n == 0 {
		return "", nil
	}
	if b == nil {
		b = make([]byte, n)
	}
	if err := m.bcast("collective", unsafe.Pointer(&b[0]), int(n), mpiByte, r); err != nil {
		return "", err
	}
	return string(b), nil
}

func (m *MPI) settle(err error) {
	m.amu.Lock()
	defer m.amu.Unlock()
	m.abort, m.settled = nil, err
}

// begin starts a collective: it fails at once on a settled abort or after
// Finalize, else runs the header for c with this rank's preparation error
// local, and checks that every rank is making the same call.
func (m *MPI) begin(c mpiCall, local error) error {
	m.amu.Lock()
	settled := m.settled
	m.amu.Unlock()
	if settled != nil {
		return settled
	}
	if m.done {
		return fmt.Errorf("parallel: mpi %s: communicator finalized", c.op)
	}
	var h mpiHeader
	h.set(mpiKind, c.kind)
	h.set(mpiElems, c.elems)
	h.set(mpiDType, c.dtype)
	h.set(mpiArg, c.arg)
	if err := m.exchange(c.op, &h, local); err != nil {
		return err
	}
	if hi, lo := h[mpiKind], -h[mpiKind+1]; hi != lo {
		return fmt.Errorf("parallel: mpi %s: ranks disagree on the collective (%s on some, %s on others): every rank must make the same calls in the same order", c.op, mpiKindName(lo), mpiKindName(hi))
	}
	for _, f := range []struct {
		i    int
		what string
	}{{mpiElems, "element count"}, {mpiDType, "dtype"}, {mpiArg, "op or root"}} {
		if hi, lo := h[f.i], -h[f.i+1]; hi != lo {
			return fmt.Errorf("parallel: mpi %s: ranks disagree on the %s (from %d to %d): every rank must make the same calls with the same shapes", c.op, f.what, lo, hi)
		}
	}
	return nil
}

func mpiKindName(k int64) string {
	names := []string{"", "all_reduce", "reduce_scatter", "all_gather", "broadcast", "barrier"}
	if k > 0 && int(k) < len(names) {
		return names[k]
	}
	return fmt.Sprintf("collective %d", k)
}
