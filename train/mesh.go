package train

import (
	"errors"
	"fmt"

	"github.com/headroom-ml/headroom/parallel"
)

// Shape returns the rank mesh of --tp, --pp and the data-parallel copies
// (DataRanks).
func (c *Common) Shape() parallel.MeshShape {
	return parallel.MeshShape{Data: c.DataRanks(), Tensor: max(c.TP, 1), Pipe: max(c.PP, 1)}
}

// RunMesh runs f for each rank of the mesh (Shape), each on its own
// goroutine with its own device — world rank r on cpu:r, or cuda:K+r —
// of the given capacity, with its Data, Tensor and Pipe communicators
// (parallel.NewMeshGroup: in-process groups, one failure domain). It
// returns the ranks, by world rank, as RunRanks does. Under --mpi this
// process runs its own rank of the mesh only (runMeshMPI).
func (c *Common) RunMesh(capacity int64, f func(r *Rank, m *parallel.Mesh) error) ([]*Rank, error) {
	if c.MPI {
		return c.runMeshMPI(capacity, f)
	}
	shape := c.Shape()
	meshes, err := parallel.NewMeshGroup(shape)
	if err != nil {
		return nil, err
	}
	ranks := make([]*Rank, shape.Size())
	for i := range ranks {
		dev, err := c.rankDevice(i, capacity)
		if err != nil {
			closeRanks(ranks[:i])
			return nil, err
		}
		ranks[i] = &Rank{Dev: dev, Comm: meshes[i].World, Via: fmt.Sprintf("in-process mesh %v", shape)}
	}
	err = parallel.RunMesh(meshes, func(m *parallel.Mesh) error { return f(ranks[m.World.Rank()], m) })
	return ranks, errors.Join(err, closeRanks(ranks))
}
