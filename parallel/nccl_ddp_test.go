package parallel_test

import (
	"fmt"
	"testing"

	"github.com/headroom-ml/headroom/device/cuda/cudatest"
	"github.com/headroom-ml/headroom/dtype"
)

// TestNCCLTrainsZeRO covers the runs of DDP through NCCL that
// TestDDPOnCudaRanks leaves out (it takes stages 0, 2 and 3 with offload
// in F32): ZeRO 1 and plain stage 3 in F32, stage 2 in BF16 with F32
// masters, stage 1 with offload in BF16 — 3 AdamW steps of an MLP on the
// two emulated GPUs (one rank on a one-GPU machine), two buckets each. Every parameter and loss equals,
// bit for bit, the same run through the in-process group on the same cuda
// ranks, and each rank's bytes per tag equal meta's plus the cuBLAS
// workspace and NCCL's own memory.
func TestNCCLTrainsZeRO(t *testing.T) {
	for _, c := range []struct {
		zero    int
		offload bool
		dt      dtype.DType
	}{{1, false, dtype.F32}, {3, false, dtype.F32}, {2, false, dtype.BF16}, {1, true, dtype.BF16}} {
		s := setup{ranks: cudatest.GPUs(t, 2), zero: c.zero, offload: c.offload, dt: c.dt, widths: []int{5, 7, 3}, batch: 8, steps: 3, bucket: int64(16 * c.dt.Size())}
		name := fmt.Sprintf("zero %d, offload %v, %s", c.zero, c.offload, c.dt)
		s.meta = true
		acct := run(t, s)
		s.meta, s.cuda = false, true
		want := run(t, s)
		s.nccl = true
		got := run(t, s)
		for r := range got {
			what := fmt.Sprintf("%s, rank %d, NCCL", name, r)
			compareValues(t, what+": parameters", got[r].params, want[r].params, 0)
			compareValues(t, what+": losses", got[r].losses, want[r].losses, 0)
			compareAccounting(t, what, got[r], acct[r])
		}
	}
}
