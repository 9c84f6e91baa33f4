package cpu_test

import (
	"testing"

	"github.com/headroom-ml/headroom/autograd/conformance"
	"github.com/headroom-ml/headroom/device"
	"github.com/headroom-ml/headroom/device/cpu"
	"github.com/headroom-ml/headroom/dtype"
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

// TestConformanceOneDevice runs the suite (in F32) on one device that
// serves every step, the way a device that is slow to open is tested.
func TestConformanceOneDevice(t *testing.T) {
	d := cpu.New(0, device.Options{})
	defer d.Close()
	conformance.Run(t, func(testing.TB) *device.Device { return d }, conformance.Options{DTypes: []dtype.DType{dtype.F32}})
}
