//go:build mpi

package parallel

/*
#cgo pkg-config: ompi
#include <mpi.h>
#include <stddef.h>

// The MPI handles (MPI_COMM_WORLD, MPI_FLOAT, MPI_IN_PLACE, …) are macros
// over library globals that cgo cannot name, so every call goes through a
// small wrapper. kind selects the element type: 0 bytes, 1 float, 2
// uint16, 3 double.

static MPI_Datatype hr_type(int kind) {
	switch (kind) {
	case 1: return MPI_FLOAT;
	case 2: return MPI_UINT16_T;
	case 3: return MPI_DOUBLE;
	}
	return MPI_BYTE;
}

static int hr_init(int *provided) {
	return MPI_Init_thread(NULL, NULL, MPI_THREAD_MULTIPLE, provided);
}

static int hr_state(int *initialized, int *finalized) {
	int rc = MPI_Initialized(initialized);
	if (rc != MPI_SUCCESS) return rc;
	return MPI_Finalized(finalized);
}

static int hr_open(MPI_Comm *c, int *rank, int *size) {
	int rc = MPI_Comm_dup(MPI_COMM_WORLD, c);
	if (rc != MPI_SUCCESS) return rc;
	rc = MPI_Comm_set_errhandler(*c, MPI_ERRORS_RETURN);
	if (rc != MPI_SUCCESS) return rc;
	rc = MPI_Comm_rank(*c, rank);
	if (rc != MPI_SUCCESS) return rc;
	return MPI_Comm_size(*c, size);
}

static void hr_finalize(void) { MPI_Finalize(); }

static int hr_close(MPI_Comm *c) {
	int rc = MPI_Comm_free(c);
	int rc2 = MPI_Finalize();
	return rc != MPI_SUCCESS ? rc : rc2;
}

static int hr_header(MPI_Comm c, long long *h, int n) {
	return MPI_Allreduce(MPI_IN_PLACE, h, n, MPI_LONG_LONG, MPI_MAX, c);
}

static int hr_allreduce(MPI_Comm c, void *buf, int n, int kind) {
	return MPI_Allreduce(MPI_IN_PLACE, buf, n, hr_type(kind), MPI_SUM, c);
}

// src NULL: in place, the input is recv (size·n elements), the result its
// first n.
static int hr_reduce_scatter(MPI_Comm c, const void *src, void *recv, int n, int kind) {
	return MPI_Reduce_scatter_block(src == NULL ? MPI_IN_PLACE : src, recv, n, hr_type(kind), MPI_SUM, c);
}

// src NULL: in place, this rank's part is already at its place in recv.
static int hr_allgather(MPI_Comm c, const void *src, void *recv, int n, int kind) {
	if (src == NULL) {
		return MPI_Allgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, recv, n, hr_type(kind), c);
	}
	return MPI_Allgather(src, n, hr_type(kind), recv, n, hr_type(kind), c);
}

static int hr_bcast(MPI_Comm c, void *buf, int n, int kind, int root) {
	return MPI_Bcast(buf, n, hr_type(kind), root, c);
}

static void hr_error_string(int code, char *buf, int *len) {
	if (MPI_Error_string(code, buf, len) != MPI_SUCCESS) *len = 0;
}
*/
import "C"

import (
	"errors"
	"fmt"
	"math"
	"sync"
	"unsafe"
)

// MPI is a Communicator over MPI: one rank per process, the ranks of
// MPI_COMM_WORLD (launched by mpirun -np N, on one machine or several). It
// exists only in builds with the mpi tag, which need cgo and OpenMPI's
// headers and library (libopenmpi-dev); see docs/MPI.md.
//
// Every collective opens with a header: one MPI_Allreduce (MAX) of ten
// int64 carrying the aborted and failed ranks and what the call is (its
// kind, element count, dtype, op or root), so that a rank that called
// Abort, a rank whose arguments were wrong and ranks that call different
// collectives make every rank fail the same call with an error instead of
// hanging or crashing inside MPI (Barrier is the header alone). The header
// costs one small-message latency per collective (microseconds within a
// machine, tens across a network), so reducing many small tensors one by
// one pays it many times: bucket them. An abort is sticky: once the ranks
// have learned of it every later collective fails at once, without
// communicating.
//
// Tensors (F32, BF16, F16, and F64 for tests) must live on a device with
// host memory (cpu). Contiguous tensors, views with an offset included,
// are passed to MPI in place; a strided tensor is copied to a dense buffer
// and back. F32 and F64 reduce in their own type; BF16 and F16 are widened
// to an F32 buffer, reduced and narrowed once. Buffers a collective
// borrows are allocated on the tensor's device under device.Communication
// and released before it returns: 4n bytes for a 16-bit AllReduce of n
// elements, 4·Size·n for a 16-bit ReduceScatter to n elements, a dense
// copy of each strided operand, a copy of src (widened to F32 if 16-bit)
// when ReduceScatter's dst lies inside src, and a copy of src when
// AllGather's src overlaps dst other than as dst's own slot (in place).
// Contiguous F32 and F64 operands that do not overlap borrow nothing.
//
// Methods other than Abort are used by one goroutine at a time (calls are
// serialized by a lock); Abort may be called from any goroutine at any
// time.
type MPI struct {
	mu   sync.Mutex // serializes MPI calls
	comm C.MPI_Comm // a duplicate of MPI_COMM_WORLD, errors returned
	rank int
	size int
	done bool // Finalize was called

	amu     sync.Mutex
	abort   error // set by Abort on this rank, not yet propagated
	settled error // the abort every rank has learned of: sticky

	threads C.int      // the thread level MPI provides
	family  *mpiFamily // the communicators split from one world (mpi_split.go)
	sub     bool       // split from another: Finalize frees nothing
}

// NewMPI initializes MPI and returns this process's rank of
// MPI_COMM_WORLD. It asks for MPI_THREAD_MULTIPLE and fails if the
// library provides less than MPI_THREAD_SERIALIZED: Go may run successive
// calls on different OS threads, and each MPI value serializes its own
// calls, so that is all one communicator needs; the communicators of a
// mesh (Split) are used at once by different goroutines and need
// MPI_THREAD_MULTIPLE. Call
// it once per process, and Finalize before the process exits.
func NewMPI() (*MPI, error) {
	var initialized, finalized C.int
	if rc := C.hr_state(&initialized, &finalized); rc != C.MPI_SUCCESS {
		return nil, mpiError("new_mpi", "MPI_Initialized", rc)
	}
	if initialized != 0 || finalized != 0 {
		return nil, errors.New("parallel: new_mpi: MPI is already initialized in this process (call NewMPI once per process)")
	}
	var provided C.int
	if rc := C.hr_init(&provided); rc != C.MPI_SUCCESS {
		return nil, mpiError("new_mpi", "MPI_Init_thread", rc)
	}
	m := &MPI{}
	var rank, size C.int
	if rc := C.hr_open(&m.comm, &rank, &size); rc != C.MPI_SUCCESS {
		err := mpiError("new_mpi", "MPI_Comm_dup", rc)
		C.hr_finalize()
		return nil, err
	}
	m.rank, m.size, m.threads = int(rank), int(size), provided
	m.family = &mpiFamily{members: []*MPI{m}}
	if provided < C.MPI_THREAD_SERIALIZED {
		m.Finalize()
		return nil, fmt.Errorf("parallel: new_mpi: the MPI library provides thread level %d, need MPI_THREAD_SERIALIZED (%d) or more", int(provided), int(C.MPI_THREAD_SERIALIZED))
	}
	return m, nil
}

// Finalize frees the communicator and finalizes MPI; the MPI value is
// unusable afterwards, and calling Finalize again does nothing. If this
// rank called Abort and the other ranks have not learned of it yet,
// Finalize first joins the collective header that tells them. Every rank
// calls it before exiting: MPI_Finalize is collective.
func (m *MPI) Finalize() error {
	if !m.sub {
		m.family.finalize(m)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.done {
		return nil
	}
	if m.pendingAbort() {
		var h mpiHeader
		m.exchange("finalize", &h, nil)
	}
	m.done = true
	if m.sub {
		return nil
	}
	if rc := C.hr_close(&m.comm); rc != C.MPI_SUCCESS {
		return mpiError("finalize", "MPI_Finalize", rc)
	}
	return nil
}

// Rank returns this process's rank in [0, Size).
func (m *MPI) Rank() int { return m.rank }

// Size returns the number of processes.
func (m *MPI) Size() int { return m.size }

// mpiError describes an MPI return code.
func mpiError(op, fn string, rc C.int) error {
	buf := make([]byte, C.MPI_MAX_ERROR_STRING)
	var n C.int
	C.hr_error_string(rc, (*C.char)(unsafe.Pointer(&buf[0])), &n)
	return fmt.Errorf("parallel: mpi %s: %s returned %d: %s", op, fn, int(rc), string(buf[:n]))
}

// mpiInt converts an element count to MPI's int.
func mpiInt(op string, n int) (C.int, error) {
	if n > math.MaxInt32 {
		return 0, fmt.Errorf("parallel: mpi %s: %d elements exceed MPI's count limit %d; split the buffer", op, n, math.MaxInt32)
	}
	return C.int(n), nil
}

// The payload calls, for mpi_ops.go. Pointers are host memory of a
// device block (outside the Go heap) or of a Go slice holding no
// pointers, passed for the duration of the call only.

// kinds of element: MPI_BYTE, MPI_FLOAT, MPI_UINT16_T (moved only),
// MPI_DOUBLE
const (
	mpiByte = 0
	mpiF32  = 1
	mpi16   = 2
	mpiF64  = 3
)

// maxInt64s replaces v on every rank by the elementwise maximum over ranks.
func (m *MPI) maxInt64s(v []int64) error {
	if rc := C.hr_header(m.comm, (*C.longlong)(unsafe.Pointer(&v[0])), C.int(len(v))); rc != C.MPI_SUCCESS {
		return mpiError("collective", "MPI_Allreduce (header)", rc)
	}
	return nil
}

// allReduce sums n elements of kind (mpiF32 or mpiF64) at p in place.
func (m *MPI) allReduce(op string, p unsafe.Pointer, n, kind int) error {
	cn, err := mpiInt(op, n)
	if err != nil {
		return err
	}
	if rc := C.hr_allreduce(m.comm, p, cn, C.int(kind)); rc != C.MPI_SUCCESS {
		return mpiError(op, "MPI_Allreduce", rc)
	}
	return nil
}

// reduceScatter sums src (Size·n elements of kind, mpiF32 or mpiF64) and
// leaves this rank's n in recv; with src nil, recv holds the input
// (Size·n elements) and gets the result in its first n.
func (m *MPI) reduceScatter(op string, src, recv unsafe.Pointer, n, kind int) error {
	cn, err := mpiInt(op, n)
	if err != nil {
		return err
	}
	if rc := C.hr_reduce_scatter(m.comm, src, recv, cn, C.int(kind)); rc != C.MPI_SUCCESS {
		return mpiError(op, "MPI_Reduce_scatter_block", rc)
	}
	return nil
}

// allGather gathers n elements of kind from every rank into recv; with
// src nil, this rank's part is already in recv.
func (m *MPI) allGather(op string, src, recv unsafe.Pointer, n, kind int) error {
	cn, err := mpiInt(op, n)
	if err != nil {
		return err
	}
	if rc := C.hr_allgather(m.comm, src, recv, cn, C.int(kind)); rc != C.MPI_SUCCESS {
		return mpiError(op, "MPI_Allgather", rc)
	}
	return nil
}

func (m *MPI) bcast(op string, p unsafe.Pointer, n, kind, root int) error {
	cn, err := mpiInt(op, n)
	if err != nil {
		return err
	}
	if rc := C.hr_bcast(m.comm, p, cn, C.int(kind), C.int(root)); rc != C.MPI_SUCCESS {
		return mpiError(op, "MPI_Bcast", rc)
	}
	return nil
}
