package parallel_test

import (
	"testing"

	"github.com/headroom-ml/headroom/device"
	"github.com/headroom-ml/headroom/device/cpu"
	"github.com/headroom-ml/headroom/device/cuda/cudatest"
	"github.com/headroom-ml/headroom/parallel"
)

// TestMain runs the package's tests with two emulated GPUs of 128 MiB
// (each holds a 32 MiB cuBLAS workspace) for the tests of cuda ranks.
func TestMain(m *testing.M) { cudatest.Main(m, 128<<20, 2) }

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
		}, n)
	}
}
