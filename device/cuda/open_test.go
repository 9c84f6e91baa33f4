package cuda_test

import (
	"errors"
	"os"
	"testing"

	"github.com/headroom-ml/headroom/device"
	"github.com/headroom-ml/headroom/device/cuda"
)

// TestNoDriver: on a machine without libcuda (this one, unless
// HEADROOM_LIBCUDA names a library), Open and Available say so.
func TestNoDriver(t *testing.T) {
	if os.Getenv("HEADROOM_LIBCUDA") != "" {
		t.Skip("HEADROOM_LIBCUDA names a driver")
	}
	if _, err := cuda.Available(); err == nil {
		t.Skip("a CUDA driver is installed here")
	}
	_, err := cuda.Open(0, device.Options{})
	if !errors.Is(err, cuda.ErrNoDriver) {
		t.Fatalf("Open without a driver: %v, want ErrNoDriver", err)
	}
	t.Log(err)
}
