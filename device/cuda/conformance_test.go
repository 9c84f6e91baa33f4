package cuda_test

import (
	"os"
	"strconv"
	"testing"

	"github.com/headroom-ml/headroom/autograd/conformance"
	"github.com/headroom-ml/headroom/device"
	"github.com/headroom-ml/headroom/device/cuda"
)

// TestConformance runs the conformance suite on the cuda device: on the
// host emulator that TestMain points the loader at (fake libcuda and
// libcublas built by emu.Build from the kernel sources, the kernels
// compiled by the real NVRTC), or, with HEADROOM_CUDA_REAL=1, on the real
// GPU cuda:N (N from HEADROOM_CUDA_DEVICE, default 0). The same code runs
// on both. One device serves every step (opening one loads the modules).
func TestConformance(t *testing.T) {
	index := 0
	if s := os.Getenv("HEADROOM_CUDA_DEVICE"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 0 {
			t.Fatalf("HEADROOM_CUDA_DEVICE=%q: want a device index ≥ 0", s)
		}
		index = n
	}
	d, err := cuda.Open(index, device.Options{})
	if err != nil {
		t.Fatalf("cuda.Open(%d): %v", index, err)
	}
	defer d.Close()
	conformance.Run(t, func(testing.TB) *device.Device { return d }, conformance.Options{})
}
