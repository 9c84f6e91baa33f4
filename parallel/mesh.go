package parallel

import (
	"errors"
	"fmt"
)

// MeshShape is the size of each dimension of a rank mesh: Data
// data-parallel replicas of a model cut into Pipe pipeline stages, each
// stage split Tensor ways by tensor parallelism. Its ranks number
// Data·Tensor·Pipe.
type MeshShape struct {
	Data, Tensor, Pipe int
}

// Size returns the number of ranks, Data·Tensor·Pipe.
func (s MeshShape) Size() int { return s.Data * s.Tensor * s.Pipe }

// Check returns what is wrong with the shape: every dimension must be ≥ 1.
func (s MeshShape) Check() error {
	if s.Data < 1 || s.Tensor < 1 || s.Pipe < 1 {
		return fmt.Errorf("parallel: mesh %v: want data, tensor and pipe sizes ≥ 1", s)
	}
	return nil
}

// String writes the shape as "dp×tp×pp".
func (s MeshShape) String() string { return fmt.Sprintf("%d×%d×%d (dp×tp×pp)", s.Data, s.Tensor, s.Pipe) }

// Rank returns the world rank of the mesh coordinates (data, tensor,
// pipe): tensor + Tensor·(data + Data·pipe). The tensor coordinate varies
// fastest, then data, then pipe (Megatron-LM's order): a tensor-parallel
// group, which communicates in every layer, is Tensor consecutive ranks
// (one machine's GPUs when Tensor divides the GPUs per machine), and a
// pipeline group, which communicates least, spans the farthest ranks.
func (s MeshShape) Rank(data, tensor, pipe int) int {
	return tensor + s.Tensor*(data+s.Data*pipe)
}

// Coords returns the mesh coordinates of world rank r (Rank's inverse).
func (s MeshShape) Coords(r int) (data, tensor, pipe int) {
	return r / s.Tensor % s.Data, r % s.Tensor, r / (s.Tensor * s.Data)
}

// Mesh is one rank's place in a mesh of Shape.Size() ranks and its
// communicators: World (every rank, by world rank), Data (the Data ranks
// with this rank's tensor and pipe coordinates, ordered by data
// coordinate), Tensor (the Tensor ranks with its data and pipe
// coordinates, by tensor coordinate) and Pipe (the Pipe ranks with its
// data and tensor coordinates, by stage). A communicator's rank is the
// coordinate: Data.Rank() == DataRank and so on.
//
// The communicators are one failure domain: once any rank aborts any of
// them (Run does when a rank's function fails), every pending and future
// collective and point-to-point call of every communicator of the mesh
// fails on every rank, naming the world rank that aborted.
type Mesh struct {
	Shape                          MeshShape
	World, Data, Tensor, Pipe      Communicator
	DataRank, TensorRank, PipeRank int
}

// domain is the groups of an in-process mesh, which fail together.
type domain struct {
	groups []*group
	ranks  [][]*local // by world rank: its member of each group
}

// NewMeshGroup returns the meshes of shape's ranks running as goroutines
// of this process (as NewGroup does), indexed by world rank: each rank's
// World is the world group's, its Data, Tensor and Pipe in-process
// sub-groups of the ranks that share its other coordinates (see Mesh and
// MeshShape.Rank). Run the ranks with RunMesh.
func NewMeshGroup(shape MeshShape) ([]*Mesh, error) {
	if err := shape.Check(); err != nil {
		return nil, err
	}
	n := shape.Size()
	d := &domain{ranks: make([][]*local, n)}
	ms := make([]*Mesh, n)
	world := d.add(newGroup(n), func(i int) int { return i })
	for r := range ms {
		dp, tp, pp := shape.Coords(r)
		ms[r] = &Mesh{Shape: shape, World: world[r], DataRank: dp, TensorRank: tp, PipeRank: pp}
	}
	for dp := range shape.Data {
		for pp := range shape.Pipe {
			cs := d.add(newGroup(shape.Tensor), func(i int) int { return shape.Rank(dp, i, pp) })
			for i, c := range cs {
				ms[shape.Rank(dp, i, pp)].Tensor = c
			}
		}
	}
	for tp := range shape.Tensor {
		for pp := range shape.Pipe {
			cs := d.add(newGroup(shape.Data), func(i int) int { return shape.Rank(i, tp, pp) })
			for i, c := range cs {
				ms[shape.Rank(i, tp, pp)].Data = c
			}
		}
		for dp := range shape.Data {
			cs := d.add(newGroup(shape.Pipe), func(i int) int { return shape.Rank(dp, tp, i) })
			for i, c := range cs {
				ms[shape.Rank(dp, tp, i)].Pipe = c
			}
		}
	}
	return ms, nil
}

// add joins g to the domain, its rank i being world rank world(i), and
// returns its communicators.
func (d *domain) add(g *group, world func(i int) int) []*local {
	g.dom = d
	d.groups = append(d.groups, g)
	for i, l := range g.ranks {
		l.world = world(i)
		d.ranks[l.world] = append(d.ranks[l.world], l)
	}
	return g.ranks
}

// RunMesh runs f for every mesh of ms (from NewMeshGroup) on its own
// goroutine, as Run does over the world communicators: a rank whose f
// fails aborts the mesh (every rank's communicators), and one that returns
// makes the calls that still wait for it fail.
func RunMesh(ms []*Mesh, f func(m *Mesh) error) error {
	if len(ms) == 0 {
		return errors.New("parallel: run_mesh: no ranks")
	}
	worlds := make([]Communicator, len(ms))
	for r, m := range ms {
		worlds[r] = m.World
	}
	return Run(worlds, func(c Communicator) error { return f(ms[c.Rank()]) })
}

// Splitter is implemented by communicators that can split their ranks
// into sub-communicators (MPI_Comm_split): every rank calls Split at the
// same point; the ranks that pass the same color form one new
// communicator, ranked by key. The new communicators share the original's
// failure domain (an Abort of any fails them all). MPI has it.
type Splitter interface {
	Split(color, key int) (Communicator, error)
}

// NewMesh returns this rank's Mesh of shape over world, a communicator
// of shape.Size() ranks that implements Splitter (MPI: one process per
// rank): its Data, Tensor and Pipe communicators are split from world by
// the mapping of MeshShape.Rank. Every rank calls it at the same point. For
// the in-process group use NewMeshGroup, which makes every rank's mesh at
// once; a world of one rank needs neither (every dimension is 1).
func NewMesh(world Communicator, shape MeshShape) (*Mesh, error) {
	if err := shape.Check(); err != nil {
		return nil, err
	}
	if world.Size() != shape.Size() {
		return nil, fmt.Errorf("parallel: new_mesh: %d ranks for a mesh %v of %d", world.Size(), shape, shape.Size())
	}
	dp, tp, pp := shape.Coords(world.Rank())
	m := &Mesh{Shape: shape, World: world, DataRank: dp, TensorRank: tp, PipeRank: pp}
	if shape.Size() == 1 {
		m.Data, m.Tensor, m.Pipe = world, world, world
		return m, nil
	}
	sp, ok := world.(Splitter)
	if !ok {
		return nil, fmt.Errorf("parallel: new_mesh: communicator %T cannot split (Splitter); in process use NewMeshGroup", world)
	}
	// The colors number each group by the coordinates its ranks share.
	for _, g := range []struct {
		c          *Communicator
		color, key int
		what       string
	}{
		{&m.Tensor, dp + shape.Data*pp, tp, "tensor"},
		{&m.Data, tp + shape.Tensor*pp, dp, "data"},
		{&m.Pipe, tp + shape.Tensor*dp, pp, "pipe"},
	} {
		c, err := sp.Split(g.color, g.key)
		if err != nil {
			return nil, fmt.Errorf("parallel: new_mesh: the %s group: %w", g.what, err)
		}
		*g.c = c
	}
	return m, nil
}
