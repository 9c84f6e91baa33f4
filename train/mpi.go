//go:build mpi

package train

import "github.com/headroom-ml/headroom/parallel"

// The mpi build runs --mpi ranks over MPI.
func init() {
	mpiComm = func() (parallel.Communicator, func() error, error) {
		m, err := parallel.NewMPI()
		if err != nil {
			return nil, nil, err
		}
		return m, m.Finalize, nil
	}
}
