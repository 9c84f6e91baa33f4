package device_test

import (
	"errors"
	"testing"

	"github.com/headroom-ml/headroom/device"
	"github.com/headroom-ml/headroom/device/meta"
)

// TestInjectOOM: the n-th allocation after InjectOOM(n) fails with an
// *OOMError whose Cause is ErrInjected and changes nothing but the OOM
// count; the ones around it succeed, and InjectOOM(0) cancels.
func TestInjectOOM(t *testing.T) {
	dev := meta.New(0, device.Options{})
	l := device.Label{Tag: device.Activation, Op: "x"}
	dev.InjectOOM(3)
	var bs []*device.Block
	for i := 1; i <= 4; i++ {
		before := dev.Stats()
		b, err := dev.Alloc(1000, l)
		var oom *device.OOMError
		switch {
		case i == 3 && (!errors.As(err, &oom) || !errors.Is(err, device.ErrInjected) || oom.Requested != 1000):
			t.Fatalf("allocation 3: %v, want the injected out-of-memory error for 1000 B", err)
		case i == 3:
			after := dev.Stats()
			if after.Requested != before.Requested || after.Reserved != before.Reserved || after.OOMs != before.OOMs+1 {
				t.Errorf("the injected failure changed the device: %+v, was %+v", after, before)
			}
		case err != nil:
			t.Fatalf("allocation %d: %v", i, err)
		default:
			bs = append(bs, b)
		}
	}
	dev.InjectOOM(1)
	dev.InjectOOM(0)
	b, err := dev.Alloc(10, l)
	if err != nil {
		t.Fatalf("after InjectOOM(0): %v", err)
	}
	for _, b := range append(bs, b) {
		b.Release()
	}
	if err := dev.Close(); err != nil {
		t.Fatal(err)
	}
}
