//go:build mpi

package parallel

/*
#cgo pkg-config: ompi
#include <mpi.h>

static int hr_split(MPI_Comm c, int color, int key, MPI_Comm *out, int *rank, int *size) {
	int rc = MPI_Comm_split(c, color, key, out);
	if (rc != MPI_SUCCESS) return rc;
	rc = MPI_Comm_set_errhandler(*out, MPI_ERRORS_RETURN);
	if (rc != MPI_SUCCESS) return rc;
	rc = MPI_Comm_rank(*out, rank);
	if (rc != MPI_SUCCESS) return rc;
	return MPI_Comm_size(*out, size);
}
*/
import "C"

import (
	"fmt"
	"sync"
)

var _ Splitter = (*MPI)(nil)

// mpiFamily is the communicators of one process split from one world:
// one failure domain.
type mpiFamily struct {
	mu      sync.Mutex
	members []*MPI
}

// abort aborts every member with err (each joins one header of its own
// communicator: see Abort); members already aborting or settled keep
// their error.
func (f *mpiFamily) abort(err error) {
	f.mu.Lock()
	ms := append([]*MPI(nil), f.members...)
	f.mu.Unlock()
	for _, m := range ms {
		m.abortOne(err)
	}
}

// Split returns a new communicator of the ranks that pass the same color,
// ranked by key (MPI_Comm_split, collective over m: every rank calls it
// at the same point). It shares m's failure domain: an Abort of either,
// or an abort learned through either, aborts both (and every other
// communicator split from the same world), so that a mesh fails as one.
// It needs MPI_THREAD_MULTIPLE, since a mesh's communicators are used by
// different goroutines at once (a DDP's reductions overlap a pipeline's
// transfers). Finalize of the split communicator frees nothing; finalize
// the world.
func (m *MPI) Split(color, key int) (Communicator, error) {
	if m.threads < C.MPI_THREAD_MULTIPLE {
		return nil, fmt.Errorf("parallel: mpi split: the library provides thread level %d, a mesh needs MPI_THREAD_MULTIPLE (%d)", int(m.threads), int(C.MPI_THREAD_MULTIPLE))
	}
	if color < 0 {
		return nil, fmt.Errorf("parallel: mpi split: color %d, want ≥ 0", color)
	}
	if err := m.Barrier(); err != nil { // a failed rank must not leave the others in MPI_Comm_split
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	s := &MPI{threads: m.threads, family: m.family, sub: true}
	var rank, size C.int
	if rc := C.hr_split(m.comm, C.int(color), C.int(key), &s.comm, &rank, &size); rc != C.MPI_SUCCESS {
		return nil, mpiError("split", "MPI_Comm_split", rc)
	}
	s.rank, s.size = int(rank), int(size)
	m.family.mu.Lock()
	m.family.members = append(m.family.members, s)
	m.family.mu.Unlock()
	return s, nil
}

// finalize finalizes every member but world, in the order of their
// splits (the same on every rank).
func (f *mpiFamily) finalize(world *MPI) {
	f.mu.Lock()
	ms := append([]*MPI(nil), f.members...)
	f.mu.Unlock()
	for _, m := range ms {
		if m != world {
			m.Finalize()
		}
	}
}
