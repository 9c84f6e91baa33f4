package parallel_test

import (
	"fmt"
	"math"
	"testing"

	"github.com/headroom-ml/headroom/device"
	"github.com/headroom-ml/headroom/device/cpu"
	"github.com/headroom-ml/headroom/device/cuda/cudatest"
	"github.com/headroom-ml/headroom/dtype"
	"github.com/headroom-ml/headroom/parallel"
)

// TestMain runs the package's tests with two emulated GPUs of 224 MiB
// (each holds a 32 MiB cuBLAS workspace) for the tests of cuda ranks.
// (Each NCCL run leaves 32 MiB of the emulated driver's memory taken
// after every Close: reported to issue #15's NCCL helper.)
func TestMain(m *testing.M) { cudatest.Main(m, 224<<20, 2) }

// TestCollectivesOnCudaRanks runs every collective with ranks on the two
// emulated GPUs, and with a third rank on the cpu (a mixed group), with
// the staging bound lowered to 96 bytes so that each collective takes
// many rounds (100 elements per slot are 9 to 34 rounds): the results
// equal, bit for bit, the reduction computed directly, as on cpu ranks.
func TestCollectivesOnCudaRanks(t *testing.T) {
	defer parallel.SetStageBytes(96)()
	gpus := []*device.Device{cudatest.Open(t, 0, device.Options{}), cudatest.Open(t, 1, device.Options{})}
	for n := 2; n <= 3; n++ {
		checkCollectives(t, 100, func(r int) *device.Device {
			if r < len(gpus) {
				return gpus[r]
			}
			return cpu.New(r, device.Options{})
		}, n, nil)
	}
}

// TestHostStagedOnCudaRanks runs every collective on the two emulated
// GPUs through HostStaged over the in-process group, which then sees
// host tensors only (as the MPI communicator must), with rounds of at
// most 96 bytes: bit for bit the direct computation again, and every
// staging tensor freed (counted on the hosts, tag communication).
func TestHostStagedOnCudaRanks(t *testing.T) {
	defer parallel.SetStageBytes(96)()
	gpus := []*device.Device{cudatest.Open(t, 0, device.Options{}), cudatest.Open(t, 1, device.Options{})}
	hosts := []*device.Device{cpu.New(100, device.Options{}), cpu.New(101, device.Options{})}
	checkCollectives(t, 100, func(r int) *device.Device { return gpus[r] }, 2,
		func(c parallel.Communicator) parallel.Communicator { return parallel.HostStaged(c, hosts[c.Rank()]) })
	for _, h := range hosts {
		st := h.Stats().ByTag[device.Communication]
		if st.Current != 0 || st.Peak == 0 || st.Peak > 96 {
			t.Errorf("%s: staging bytes current %d peak %d, want 0 and (0, 96]", h, st.Current, st.Peak)
		}
	}
}

// TestDDPOnCudaRanks trains an MLP for 3 steps with AdamW on 2 ranks on
// the emulated GPUs, under ZeRO stages 0–3 and offload (the optimizer on
// the host cpu:100+r), in F32 and BF16 with F32 masters, and compares it
// with the same run on cpu ranks — every parameter and loss, within the
// cuda device's F32 tolerance — and each rank's accounting with the same
// run on meta devices: every tag's current and peak bytes equal meta's,
// the workspace's plus the one cuBLAS workspace block the device holds
// from Open, and the host's bytes under offload equal too. Three of the
// runs also go through NCCL: the same parameters bit for bit, and the
// same accounting plus NCCL's own memory (tag communication).
func TestDDPOnCudaRanks(t *testing.T) {
	for _, c := range []struct {
		zero    int
		offload bool
		dt      dtype.DType
		nccl    bool // also through NCCL: bit for bit the in-process group's
	}{{0, false, dtype.F32, true}, {1, false, dtype.F32, false}, {2, false, dtype.F32, true}, {3, false, dtype.F32, false},
		{2, true, dtype.F32, false}, {3, true, dtype.F32, true}, {2, false, dtype.BF16, false}, {1, true, dtype.BF16, false}} {
		s := setup{ranks: 2, zero: c.zero, offload: c.offload, dt: c.dt, widths: []int{5, 7, 3}, batch: 8, steps: 3, bucket: int64(16 * c.dt.Size())} // two buckets
		name := fmt.Sprintf("zero %d, offload %v, %s", c.zero, c.offload, c.dt)
		want := run(t, s)
		s.meta = true
		acct := run(t, s)
		s.meta, s.cuda = false, true
		got := run(t, s)
		var viaNCCL []result
		if c.nccl {
			s.nccl = true
			viaNCCL = run(t, s)
		}
		if len(want[0].ddp.buckets) < 2 {
			t.Fatalf("%s: buckets %v, want several", name, want[0].ddp.buckets)
		}
		tol := 1e-5
		if c.dt != dtype.F32 {
			tol = 2e-2 // one BF16 rounding of a parameter apart
		}
		for r := range got {
			compareValues(t, fmt.Sprintf("%s, rank %d: parameters", name, r), got[r].params, want[r].params, tol)
			compareValues(t, fmt.Sprintf("%s, rank %d: losses", name, r), got[r].losses, want[r].losses, tol)
			compareAccounting(t, fmt.Sprintf("%s, rank %d", name, r), got[r], acct[r])
			if viaNCCL != nil {
				compareValues(t, fmt.Sprintf("%s, rank %d: parameters through NCCL", name, r), viaNCCL[r].params, got[r].params, 0)
				compareAccounting(t, fmt.Sprintf("%s, rank %d, NCCL", name, r), viaNCCL[r], acct[r])
			}
		}
	}
}

// compareValues fails t when got and want differ by more than tol times
// the largest |want|.
func compareValues(t *testing.T, what string, got, want []float64, tol float64) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d values, want %d", what, len(got), len(want))
	}
	var scale, worst float64
	for i := range want {
		scale = max(scale, math.Abs(want[i]))
	}
	for i := range want {
		worst = max(worst, math.Abs(got[i]-want[i]))
	}
	if !(worst <= tol*scale) {
		t.Errorf("%s: worst |Δ| %.3g, want ≤ %.3g (%g of max |want| %.3g)", what, worst, tol*scale, tol, scale)
	}
	t.Logf("%s: worst |Δ| %.3g of max |want| %.3g", what, worst, scale)
}

// compareAccounting checks a cuda rank's bytes per tag, current and peak,
// against the same rank on meta, plus what cuda held before the model
// (fresh: the workspace block it holds from Open, and under NCCL the
// communicator's memory); and the offload host's, which is cpu beside
// cuda.
func compareAccounting(t *testing.T, what string, g, m result) {
	t.Helper()
	var fresh int64
	for tag := range device.NumTags {
		fresh += g.fresh[tag]
	}
	if m.fresh != ([device.NumTags]int64{}) || g.fresh[device.Workspace] <= 0 {
		t.Fatalf("%s: fresh devices hold %v bytes by tag (cuda) and %v (meta), want the cuBLAS workspace and none", what, g.fresh, m.fresh)
	}
	for tag := range device.NumTags {
		want := m.dev.ByTag[tag]
		want.Current += g.fresh[tag]
		want.Peak += g.fresh[tag]
		if got := g.dev.ByTag[tag]; got.Current != want.Current || got.Peak != want.Peak {
			t.Errorf("%s: %s bytes current %d peak %d on cuda, want %d and %d (meta's plus %d held before the model)", what, tag, got.Current, got.Peak, want.Current, want.Peak, g.fresh[tag])
		}
		if got, want := g.host.ByTag[tag], m.host.ByTag[tag]; got.Current != want.Current || got.Peak != want.Peak {
			t.Errorf("%s: host %s bytes current %d peak %d, want %d and %d", what, tag, got.Current, got.Peak, want.Current, want.Peak)
		}
	}
	if got, want := g.dev.Requested.Peak, m.dev.Requested.Peak+fresh; got != want {
		t.Errorf("%s: requested peak %d on cuda, want %d (meta's plus the workspace)", what, got, want)
	}
}
