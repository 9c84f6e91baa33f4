//go:build mpi

package parallel

/*
#cgo pkg-config: ompi
#include <mpi.h>

// Point-to-point data moves as bytes under tag 1; abort notices, one
// long long each, under tag 2 (collectives never match either).
#define HR_TAG_DATA 1
#define HR_TAG_ABORT 2

static long long hr_notice_out = 1; // what a notice carries (nothing read)
static long long hr_notice_in;

static int hr_isend(MPI_Comm c, void *buf, int n, int to, MPI_Request *r) {
	return MPI_Isend(buf, n, MPI_BYTE, to, HR_TAG_DATA, c, r);
}

static int hr_irecv(MPI_Comm c, void *buf, int n, int from, MPI_Request *r) {
	return MPI_Irecv(buf, n, MPI_BYTE, from, HR_TAG_DATA, c, r);
}

// hr_test sets *done when r completed and then *bytes to what it received.
static int hr_test(MPI_Request *r, int *done, int *bytes) {
	MPI_Status st;
	int rc = MPI_Test(r, done, &st);
	if (rc != MPI_SUCCESS || !*done) return rc;
	return MPI_Get_count(&st, MPI_BYTE, bytes);
}

// hr_notify sends an abort notice to every other rank, eagerly (8 bytes),
// without waiting: each request is freed at once.
static int hr_notify(MPI_Comm c, int rank, int size) {
	for (int r = 0; r < size; r++) {
		if (r == rank) continue;
		MPI_Request q;
		int rc = MPI_Isend(&hr_notice_out, 1, MPI_LONG_LONG, r, HR_TAG_ABORT, c, &q);
		if (rc != MPI_SUCCESS) return rc;
		rc = MPI_Request_free(&q);
		if (rc != MPI_SUCCESS) return rc;
	}
	return MPI_SUCCESS;
}

// hr_noticed sets *flag and consumes the notice when one has arrived.
static int hr_noticed(MPI_Comm c, int *flag) {
	MPI_Status st;
	int rc = MPI_Iprobe(MPI_ANY_SOURCE, HR_TAG_ABORT, c, flag, &st);
	if (rc != MPI_SUCCESS || !*flag) return rc;
	return MPI_Recv(&hr_notice_in, 1, MPI_LONG_LONG, st.MPI_SOURCE, HR_TAG_ABORT, c, MPI_STATUS_IGNORE);
}

// hr_abandon gives up a pending request: a receive is cancelled and
// completed, a send is freed (MPI finishes or drops it).
static int hr_abandon(MPI_Request *r, int recv) {
	if (*r == MPI_REQUEST_NULL) return MPI_SUCCESS;
	if (!recv) return MPI_Request_free(r);
	int rc = MPI_Cancel(r);
	if (rc != MPI_SUCCESS) return rc;
	return MPI_Wait(r, MPI_STATUS_IGNORE);
}
*/
import "C"

import (
	"fmt"
	"time"
	"unsafe"

	"github.com/headroom-ml/headroom/autograd"
)

var _ PointToPoint = (*MPI)(nil)

// Send copies t (contiguous, host memory) to rank to's matching Recv:
// MPI_Isend of its bytes, polled (see Recv).
func (m *MPI) Send(t *autograd.Tensor, to int) error {
	return m.p2p("send", []mpiTransfer{{t: t, peer: to}})
}

// Recv overwrites t (contiguous, host memory) with rank from's matching
// Send: MPI_Irecv of its bytes, polled every 100 µs at most until it
// completes, an abort notice arrives from another rank, or this rank
// calls Abort — then it fails, after joining the collective header that
// settles the abort on every rank (see Abort). The byte counts must
// agree: a longer message fails with MPI's truncation error, a shorter one
// with a count error, on the receiving side (the sender learns of it from
// the abort that follows).
func (m *MPI) Recv(t *autograd.Tensor, from int) error {
	return m.p2p("recv", []mpiTransfer{{t: t, peer: from, recv: true}})
}

// SendRecv sends send to rank to and receives recv from rank from, both
// pending at once.
func (m *MPI) SendRecv(send *autograd.Tensor, to int, recv *autograd.Tensor, from int) error {
	return m.p2p("sendrecv", []mpiTransfer{{t: recv, peer: from, recv: true}, {t: send, peer: to}})
}

// mpiTransfer is one side of a point-to-point call.
type mpiTransfer struct {
	t    *autograd.Tensor
	peer int
	recv bool
	b    []byte
	req  C.MPI_Request
	done bool
}

// p2p posts the transfers and polls them to completion or abort.
func (m *MPI) p2p(op string, xs []mpiTransfer) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.p2pReady(op, xs); err != nil {
		return err
	}
	for i := range xs {
		x := &xs[i]
		n, err := mpiInt(op, len(x.b))
		var rc C.int
		if err == nil {
			p := unsafe.Pointer(unsafe.SliceData(x.b))
			if x.recv {
				rc = C.hr_irecv(m.comm, p, n, C.int(x.peer), &x.req)
			} else {
				rc = C.hr_isend(m.comm, p, n, C.int(x.peer), &x.req)
			}
			if rc != C.MPI_SUCCESS {
				err = mpiError(op, "MPI_Isend/MPI_Irecv", rc)
			}
		}
		if err != nil {
			m.abandon(xs[:i])
			return err
		}
	}
	return m.poll(op, xs)
}

// p2pReady checks the call before anything is posted.
func (m *MPI) p2pReady(op string, xs []mpiTransfer) error {
	m.amu.Lock()
	settled := m.settled
	m.amu.Unlock()
	switch {
	case settled != nil:
		return settled
	case m.done:
		return fmt.Errorf("parallel: mpi %s: communicator finalized", op)
	}
	for i := range xs {
		x := &xs[i]
		switch {
		case x.peer < 0 || x.peer >= m.size || x.peer == m.rank:
			return fmt.Errorf("parallel: mpi %s: rank %d names peer %d: want another rank in [0, %d)", op, m.rank, x.peer, m.size)
		case x.t == nil || x.t.Released():
			return fmt.Errorf("parallel: mpi %s: tensor is nil or released", op)
		case !x.t.IsContiguous():
			return fmt.Errorf("parallel: mpi %s: tensor %v with strides %v is not contiguous", op, x.t.Shape(), x.t.Strides())
		}
		host := x.t.Block().Bytes()
		if host == nil {
			return fmt.Errorf("parallel: mpi %s: tensor %v is on device %s, which has no host memory", op, x.t.Shape(), x.t.Device().Name())
		}
		off := x.t.Offset() * x.t.DType().Size()
		x.b = host[off : off+int(x.t.Bytes())]
	}
	return nil
}

// poll tests the transfers until all are done; an abort notice or this
// rank's own abort makes it give them up and settle the abort.
func (m *MPI) poll(op string, xs []mpiTransfer) error {
	wait := time.Microsecond
	for {
		left := 0
		for i := range xs {
			x := &xs[i]
			if x.done {
				continue
			}
			var done, bytes C.int
			if rc := C.hr_test(&x.req, &done, &bytes); rc != C.MPI_SUCCESS {
				x.done = true
				m.abandon(xs)
				return mpiError(op, "MPI_Test", rc)
			}
			if done == 0 {
				left++
				continue
			}
			x.done = true
			if x.recv && int(bytes) != len(x.b) {
				m.abandon(xs)
				return fmt.Errorf("parallel: mpi %s: rank %d sent %d bytes, rank %d receives %d: both sides must agree", op, x.peer, int(bytes), m.rank, len(x.b))
			}
			if x.recv {
				x.t.Block().Bump()
			}
		}
		if left == 0 {
			return nil
		}
		var flag C.int
		if rc := C.hr_noticed(m.comm, &flag); rc != C.MPI_SUCCESS {
			m.abandon(xs)
			return mpiError(op, "MPI_Iprobe", rc)
		}
		if flag != 0 || m.pendingAbort() {
			m.abandon(xs)
			var h mpiHeader
			if err := m.exchange(op, &h, nil); err != nil {
				return err
			}
			return fmt.Errorf("parallel: mpi %s: an abort notice arrived but the header names no aborted rank", op)
		}
		time.Sleep(wait)
		wait = min(2*wait, 100*time.Microsecond)
	}
}

// abandon gives up the transfers not done yet.
func (m *MPI) abandon(xs []mpiTransfer) {
	for i := range xs {
		if x := &xs[i]; !x.done {
			recv := C.int(0)
			if x.recv {
				recv = 1
			}
			C.hr_abandon(&x.req, recv)
			x.done = true
		}
	}
}

// notify tells every other rank of this rank's abort, so that one waiting
// in a point-to-point call joins the header that settles it.
func (m *MPI) notify() error {
	if rc := C.hr_notify(m.comm, C.int(m.rank), C.int(m.size)); rc != C.MPI_SUCCESS {
		return mpiError("abort", "MPI_Isend (notice)", rc)
	}
	return nil
}
