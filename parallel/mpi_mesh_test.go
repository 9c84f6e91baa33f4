//go:build mpi

package parallel_test

import (
	"errors"
	"math"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/headroom-ml/headroom/dtype"
	"github.com/headroom-ml/headroom/parallel"
)

// TestMPIMeshRanks runs as each of the two ranks TestMPI launches: meshes
// of MPI_Comm_split communicators, TP2 (1×2×1) and PP2 (1×1×2) with ZeRO-1
// over the one-rank data group, 5 AdamW steps in F64 against one device's
// run (computed by each rank in process): losses within 1e-12 relative
// (tensor-parallel partial sums), parameters within 1e-10; the pipeline
// (TP1) bit for bit. Last, rank 1 aborts its one-rank Data communicator:
// rank 0, in a collective of its Tensor communicator, must fail within
// 20 s naming rank 1's error (one failure domain across the splits).
// Between the two, 3 steps clipped by the global norm (MeshOptimizer, clip
// 0.05) give both ranks one device's norm within 1e-12 relative.
func TestMPIMeshRanks(t *testing.T) {
	if os.Getenv("OMPI_COMM_WORLD_SIZE") == "" {
		t.Skip("runs as a rank under mpirun, launched by TestMPI")
	}
	w, err := parallel.NewMPI()
	if err != nil {
		t.Fatalf("NewMPI: %v", err)
	}
	defer w.Finalize()
	for _, sh := range []parallel.MeshShape{{1, 2, 1}, {1, 1, 2}} {
		m, err := parallel.NewMesh(w, sh)
		if err != nil {
			t.Fatalf("%v: %v", sh, err)
		}
		ms := smallMesh(dtype.F64, sh)
		ms.steps = 5
		want, shapes := ms.reference(t)
		got, err := ms.rank(m)
		if err != nil {
			t.Fatalf("%v rank %d: %v", sh, w.Rank(), err)
		}
		rel := 1e-10
		if sh.Tensor == 1 {
			rel = 0
		}
		for step, l := range got.losses {
			if !near(l, want.losses[step], rel/100) {
				t.Errorf("%v rank %d step %d: loss %v, one device %v", sh, w.Rank(), step, l, want.losses[step])
			}
		}
		n := 0
		for name, v := range want.params {
			if stageOf(name, ms.cfg.Layers, sh.Pipe) != m.PipeRank {
				continue
			}
			n++
			wv := shardOf(name, v, shapes[name], m.TensorRank, sh.Tensor)
			gv := got.params[name]
			if len(gv) != len(wv) {
				t.Fatalf("%v rank %d: %s has %d elements, want %d", sh, w.Rank(), name, len(gv), len(wv))
			}
			for i := range wv {
				if !keyBias(name, i, ms.cfg.Width/sh.Tensor) && math.Abs(gv[i]-wv[i]) > rel*math.Max(math.Abs(wv[i]), 0.02) {
					t.Errorf("%v rank %d: %s[%d] = %v, one device %v", sh, w.Rank(), name, i, gv[i], wv[i])
					break
				}
			}
		}
		if n != len(got.params) {
			t.Errorf("%v rank %d: %d parameters, its stage %d", sh, w.Rank(), len(got.params), n)
		}
		t.Logf("%v rank %d: %d steps, losses %.4f → %.4f", sh, w.Rank(), ms.steps, got.losses[0], got.losses[len(got.losses)-1])
	}
	for _, sh := range []parallel.MeshShape{{1, 2, 1}, {1, 1, 2}} { // global-norm clipping over the MPI mesh
		m, err := parallel.NewMesh(w, sh)
		if err != nil {
			t.Fatalf("%v: %v", sh, err)
		}
		ms := smallMesh(dtype.F64, sh)
		ms.steps, ms.clip = 3, 0.05
		want, _ := ms.reference(t)
		got, err := ms.rank(m)
		if err != nil {
			t.Fatalf("%v rank %d, clipped: %v", sh, w.Rank(), err)
		}
		for step, n := range got.norms {
			if math.Abs(n-want.norms[step]) > 1e-12*want.norms[step] {
				t.Errorf("%v rank %d step %d: gradient norm %v, one device %v", sh, w.Rank(), step, n, want.norms[step])
			}
		}
		t.Logf("%v rank %d, clip %v: norms %v, one device %v", sh, w.Rank(), ms.clip, got.norms, want.norms)
	}
	m, err := parallel.NewMesh(w, parallel.MeshShape{Data: 1, Tensor: 2, Pipe: 1})
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if w.Rank() == 1 {
		m.Data.Abort(errors.New("injected failure on rank 1"))
		return
	}
	var ferr error
	for ferr == nil && time.Since(start) < 20*time.Second {
		ferr = m.Tensor.Barrier()
	}
	if ferr == nil || !strings.Contains(ferr.Error(), "injected failure on rank 1") {
		t.Errorf("rank 0's Tensor group after rank 1 aborted its Data group: %v", ferr)
	}
	t.Logf("rank 0 failed %v after rank 1's abort: %v", time.Since(start).Round(time.Millisecond), ferr)
}
