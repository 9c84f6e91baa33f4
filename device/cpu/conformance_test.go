package cpu_test

import (
	"testing"

	"github.com/headroom-ml/headroom/autograd/conformance"
	"github.com/headroom-ml/headroom/device"
	"github.com/headroom-ml/headroom/device/cpu"
)

// TestConformance runs the conformance suite on the cpu device, against
// the cpu device in F64 and the meta device's accounting.
func TestConformance(t *testing.T) {
	conformance.Run(t, func(t testing.TB) *device.Device {
		d := cpu.New(0, device.Options{})
		t.Cleanup(func() { d.Close() })
		return d
	}, conformance.Options{})
}
