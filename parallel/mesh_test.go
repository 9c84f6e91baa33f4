package parallel_test

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/headroom-ml/headroom/autograd"
	"github.com/headroom-ml/headroom/device"
	"github.com/headroom-ml/headroom/device/cpu"
	"github.com/headroom-ml/headroom/dtype"
	"github.com/headroom-ml/headroom/parallel"
)

// TestMeshMapping checks the documented rank mapping on every shape up to
// 2×3×2 and that each communicator of NewMeshGroup holds the ranks it
// should: an all-gather of every rank's world rank over each of Tensor,
// Data and Pipe must list exactly the world ranks of MeshShape.Rank with
// one coordinate varying, in that coordinate's order.
func TestMeshMapping(t *testing.T) {
	for _, s := range []parallel.MeshShape{{1, 1, 1}, {2, 1, 1}, {1, 2, 1}, {1, 1, 2}, {2, 2, 2}, {2, 3, 2}, {3, 2, 1}} {
		for r := range s.Size() {
			dp, tp, pp := s.Coords(r)
			if got := s.Rank(dp, tp, pp); got != r || r != tp+s.Tensor*(dp+s.Data*pp) {
				t.Fatalf("%v: rank %d → (%d, %d, %d) → %d", s, r, dp, tp, pp, got)
			}
		}
		ms, err := parallel.NewMeshGroup(s)
		if err != nil {
			t.Fatal(err)
		}
		err = parallel.RunMesh(ms, func(m *parallel.Mesh) error {
			for _, g := range []struct {
				c    parallel.Communicator
				rank int
				at   func(i int) int
			}{
				{m.Tensor, m.TensorRank, func(i int) int { return s.Rank(m.DataRank, i, m.PipeRank) }},
				{m.Data, m.DataRank, func(i int) int { return s.Rank(i, m.TensorRank, m.PipeRank) }},
				{m.Pipe, m.PipeRank, func(i int) int { return s.Rank(m.DataRank, m.TensorRank, i) }},
			} {
				if g.c.Rank() != g.rank {
					return fmt.Errorf("communicator rank %d, coordinate %d", g.c.Rank(), g.rank)
				}
				got, err := gatherRanks(g.c, m.World.Rank())
				if err != nil {
					return err
				}
				for i, w := range got {
					if w != g.at(i) {
						return fmt.Errorf("group member %d is world rank %d, want %d (all: %v)", i, w, g.at(i), got)
					}
				}
			}
			return nil
		})
		if err != nil {
			t.Errorf("%v: %v", s, err)
		}
	}
	if _, err := parallel.NewMeshGroup(parallel.MeshShape{2, 0, 1}); err == nil {
		t.Error("a mesh with a zero dimension was accepted")
	}
}

// gatherRanks all-gathers every member's world rank over c.
func gatherRanks(c parallel.Communicator, world int) ([]int, error) {
	dev := cpu.New(world, device.Options{})
	dst := autograd.New(dev, dtype.F64, 0, c.Size())
	src := autograd.New(dev, dtype.F64, 0, 1)
	defer dst.Release()
	defer src.Release()
	src.SetFloat64s([]float64{float64(world)})
	if err := c.AllGather(dst, src); err != nil {
		return nil, err
	}
	var out []int
	for _, v := range dst.Float64s() {
		out = append(out, int(v))
	}
	return out, nil
}

// TestMeshFailingRank: on a 2×2×2 mesh each rank in turn fails while the
// others loop over collectives of their Tensor, Data and Pipe groups and
// point-to-point calls between stages; ranks that share no group with the
// failed one block only on ranks that do. Every rank must return within
// 10 s, the others with an *AbortError naming the failed world rank.
func TestMeshFailingRank(t *testing.T) {
	s := parallel.MeshShape{Data: 2, Tensor: 2, Pipe: 2}
	for bad := range s.Size() {
		ms, err := parallel.NewMeshGroup(s)
		if err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		start := time.Now()
		var took [8]time.Duration
		go func() {
			done <- parallel.RunMesh(ms, func(m *parallel.Mesh) error {
				defer func() { took[m.World.Rank()] = time.Since(start) }()
				return meshLoop(m, bad)
			})
		}()
		select {
		case <-time.After(10 * time.Second):
			t.Fatalf("rank %d failing: no result within 10s: a deadlock", bad)
		case err = <-done:
		}
		var re *parallel.RankError
		n := 0
		for _, e := range err.(interface{ Unwrap() []error }).Unwrap() {
			if !errors.As(e, &re) {
				t.Fatalf("%v is not a RankError", e)
			}
			n++
			var ae *parallel.AbortError
			if re.Rank != bad && (!errors.As(e, &ae) || ae.Rank != bad) {
				t.Errorf("rank %d failing: rank %d returned %v, want an AbortError naming rank %d", bad, re.Rank, e, bad)
			}
		}
		if n != s.Size() {
			t.Errorf("rank %d failing: %d ranks returned errors, want all %d: %v", bad, n, s.Size(), err)
		}
		t.Logf("rank %d failing: every rank returned within %v", bad, slowest(took[:]))
	}
}

func slowest(ds []time.Duration) time.Duration {
	var m time.Duration
	for _, d := range ds {
		m = max(m, d)
	}
	return m.Round(time.Microsecond)
}

// meshLoop runs collectives on m's groups and sends between its stages
// until one fails; rank bad fails after a few rounds.
func meshLoop(m *parallel.Mesh, bad int) error {
	dev := cpu.New(m.World.Rank(), device.Options{})
	x := autograd.New(dev, dtype.F32, 0, 4)
	defer x.Release()
	p2p := m.Pipe.(parallel.PointToPoint)
	for round := 0; ; round++ {
		if m.World.Rank() == bad && round == 3 {
			return errors.New("injected failure")
		}
		for _, c := range []parallel.Communicator{m.Tensor, m.Data} {
			if err := c.AllReduce(x, parallel.Sum); err != nil {
				return err
			}
		}
		var err error
		if m.PipeRank == 0 {
			err = p2p.Send(x, 1)
		} else {
			err = p2p.Recv(x, 0)
		}
		if err != nil {
			return err
		}
	}
}
