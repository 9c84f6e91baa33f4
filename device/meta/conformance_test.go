package meta_test

import (
	"testing"

	"github.com/headroom-ml/headroom/autograd/conformance"
	"github.com/headroom-ml/headroom/device"
	"github.com/headroom-ml/headroom/device/meta"
)

// TestConformance runs the accounting part of the conformance suite on
// the meta device: its memory must be the cpu device's byte for byte, its
// OOMs fall at the same peak, and a step leaves nothing.
func TestConformance(t *testing.T) {
	conformance.Run(t, func(t testing.TB) *device.Device {
		d := meta.New(0, device.Options{})
		t.Cleanup(func() { d.Close() })
		return d
	}, conformance.Options{NoData: true})
}
