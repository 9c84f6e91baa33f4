package parallel_test

import (
	"fmt"
	"testing"

	"github.com/headroom-ml/headroom/device"
	"github.com/headroom-ml/headroom/device/cuda/cudatest"
	"github.com/headroom-ml/headroom/dtype"
	"github.com/headroom-ml/headroom/parallel"
)

// closeAll closes NCCL communicators (of the tests' runs).
func closeAll(comms []parallel.Communicator) {
	for _, c := range comms {
		c.(*parallel.NCCL).Close()
	}
}

// TestNCCLTrainsDDPAndZeRO trains an MLP for 3 steps with AdamW on 2 ranks
// on the emulated GPUs through NCCL, under ZeRO stages 0–3 (F32) and
// stage 2 in BF16 with F32 masters, two buckets each, and compares it with
// the same run through the in-process group on cpu ranks — every parameter
// and loss, within the cuda device's F32 tolerance — and each rank's bytes
// per tag, current and peak, with the same run on meta: equal, plus the
// cuBLAS workspace (workspace) and NCCL's buffers and its barrier's F32
// (communication), which the devices held before the model.
func TestNCCLTrainsDDPAndZeRO(t *testing.T) {
	devs := ncclDevices(t, 2)
	fresh := devs[0].Stats().ByTag[device.Workspace].Current // the cuBLAS workspace
	for _, c := range []struct {
		zero int
		dt   dtype.DType
	}{{0, dtype.F32}, {1, dtype.F32}, {2, dtype.F32}, {3, dtype.F32}, {2, dtype.BF16}} {
		s := setup{ranks: 2, zero: c.zero, dt: c.dt, widths: []int{5, 7, 3}, batch: 8, steps: 3, bucket: int64(16 * c.dt.Size())}
		name := fmt.Sprintf("zero %d, %s", c.zero, c.dt)
		want := run(t, s)
		s.meta = true
		acct := run(t, s)
		s.meta, s.nccl = false, devs
		got := run(t, s)
		tol := 1e-5
		if c.dt != dtype.F32 {
			tol = 2e-2 // one BF16 rounding of a parameter apart
		}
		for r := range got {
			what := fmt.Sprintf("%s, rank %d", name, r)
			compareValues(t, what+": parameters", got[r].params, want[r].params, tol)
			compareValues(t, what+": losses", got[r].losses, want[r].losses, tol)
			nccl := got[r].fresh - fresh
			if want := int64(4<<20 + 4); nccl != want && !(cudatest.Real() && nccl > 4) {
				t.Errorf("%s: the device held %d bytes beside the workspace before the model, want NCCL's 4 MiB and the barrier's 4", what, nccl)
			}
			for tag := range device.NumTags {
				w := acct[r].dev.ByTag[tag]
				switch tag {
				case device.Workspace:
					w.Current, w.Peak = w.Current+fresh, w.Peak+fresh
				case device.Communication:
					w.Current, w.Peak = w.Current+nccl, w.Peak+nccl
				}
				if g := got[r].dev.ByTag[tag]; g.Current != w.Current || g.Peak != w.Peak {
					t.Errorf("%s: %s bytes current %d peak %d, want %d and %d", what, tag, g.Current, g.Peak, w.Current, w.Peak)
				}
			}
		}
	}
}
