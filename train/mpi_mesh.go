package train

import (
	"errors"
	"fmt"

	"github.com/headroom-ml/headroom/parallel"
)

// runMeshMPI is RunMesh under --mpi: this process is one rank of an
// mpirun launch of the mesh's size (--ranks, the -np value), on cpu:l (l
// its local rank). Its Data, Tensor and Pipe communicators are split from
// MPI's world (parallel.NewMesh: the mapping of MeshShape.Rank, one
// failure domain); a rank that fails aborts the world, so the others
// return its error instead of waiting. It returns this process's rank
// only (Follower tells the ranks other than 0).
func (c *Common) runMeshMPI(capacity int64, f func(r *Rank, m *parallel.Mesh) error) ([]*Rank, error) {
	shape := c.Shape()
	if kind, _, err := ParseDevice(c.Device); err != nil || kind != "cpu" {
		return nil, Usagef("--mpi with --tp %d --pp %d on --device %s: not available yet (MPI moves host memory; run the mesh on cpu)", c.TP, c.PP, c.Device)
	}
	world, finalize, err := mpiComm()
	if err != nil {
		return nil, err
	}
	defer finalize()
	if world.Size() != shape.Size() {
		err := fmt.Errorf("--ranks %d (mesh %v), but mpirun started %d processes: give --ranks the -np value", c.Ranks, shape, world.Size())
		world.Abort(err)
		return nil, err
	}
	rank := world.Rank()
	dev, err := c.rankDevice(localRank(rank), capacity)
	if err != nil {
		world.Abort(err)
		return nil, &parallel.RankError{Rank: rank, Err: err}
	}
	r := &Rank{Dev: dev, Comm: world, Via: fmt.Sprintf("MPI mesh %v", shape)}
	ranks := []*Rank{r}
	mesh, err := parallel.NewMesh(world, shape)
	if err == nil {
		err = f(r, mesh)
	}
	if err != nil {
		world.Abort(err)
		closeRanks(ranks)
		return ranks, &parallel.RankError{Rank: rank, Err: err}
	}
	return ranks, errors.Join(world.Barrier(), closeRanks(ranks))
}
