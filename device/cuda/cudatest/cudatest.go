package cudatest

import (
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/headroom-ml/headroom/device"
	"github.com/headroom-ml/headroom/device/cuda"
	"github.com/headroom-ml/headroom/internal/cuda/emu"
)

// DefaultMemory is the emulated device's total memory when Main is given 0.
const DefaultMemory = 512 << 20

// Real reports whether the tests run on the machine's real driver
// (HEADROOM_CUDA_REAL=1) rather than on the emulator.
func Real() bool { return os.Getenv("HEADROOM_CUDA_REAL") == "1" }

// Setup builds the emulator and sets the process environment so that
// device/cuda loads it: memory bytes per device (0: DefaultMemory) and
// devices emulated GPUs (0: 1). It does nothing when Real. Call it before
// the first cuda.Open of the process (from TestMain).
func Setup(memory int64, devices int) error {
	if Real() {
		return nil
	}
	if memory == 0 {
		memory = DefaultMemory
	}
	if devices == 0 {
		devices = 1
	}
	libs, err := emu.Build(cuda.Sources())
	if err != nil {
		return fmt.Errorf("cudatest: the host emulator: %w", err)
	}
	env := append(libs.Env(), fmt.Sprintf("HEADROOM_EMU_MEMORY=%d", memory), fmt.Sprintf("HEADROOM_EMU_DEVICES=%d", devices))
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		if err := os.Setenv(k, v); err != nil {
			return fmt.Errorf("cudatest: %s: %w", k, err)
		}
	}
	return libs.SetMemory(memory)
}

// Main is TestMain for a package whose tests use the cuda device: Setup,
// then the tests. A failed Setup fails the package (it never skips).
func Main(m *testing.M, memory int64, devices int) {
	if err := Setup(memory, devices); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	os.Exit(m.Run())
}

// Open opens cuda:index with options o and, at cleanup, closes it and
// fails t if Close reports an error (a leak).
func Open(t testing.TB, index int, o device.Options) *device.Device {
	t.Helper()
	d, err := cuda.Open(index, o)
	if err != nil {
		t.Fatalf("cudatest: %v", err)
	}
	t.Cleanup(func() {
		if err := d.Close(); err != nil {
			t.Errorf("cudatest: Close of %s: %v", d.Name(), err)
		}
	})
	return d
}

// GPUs returns min(want, the number of cuda devices), for a test that is
// still meaningful on fewer GPUs than it would like (a real machine with
// one GPU: its ranks beyond the first become cpu ranks, or fewer ranks);
// it fails t when the driver has none.
func GPUs(t testing.TB, want int) int {
	t.Helper()
	n, err := cuda.Available()
	if err != nil || n < 1 {
		t.Fatalf("cudatest: the driver has no cuda device (%d, %v)", n, err)
	}
	return min(want, n)
}

// NeedGPUs fails t at once, naming the need, unless the driver has at
// least n cuda devices: for a test that means nothing on fewer (a
// collective waiting for a second rank). It never skips: a one-GPU run
// of scripts/gpu-check.sh must leave such tests out by name.
func NeedGPUs(t testing.TB, n int) {
	t.Helper()
	if have := GPUs(t, n); have < n {
		t.Fatalf("cudatest: %s needs %d cuda devices, the driver has %d (leave it out on this machine: -run/-skip)", t.Name(), n, have)
	}
}
