package device_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/headroom-ml/headroom/device"
	"github.com/headroom-ml/headroom/device/meta"
)

// TestHold records 3 MiB that a library took by itself on a device of
// 8 MiB: every level and the tag's counter rise by exactly that, the
// summary shows it, an allocation that would fit only without it is an
// OOM, it is no leak, and Release (twice) gives everything back.
func TestHold(t *testing.T) {
	const mib = 1 << 20
	d := meta.New(0, device.Options{Capacity: 8 * mib})
	h, err := d.Hold(3*mib, device.Label{Tag: device.Communication, Op: "nccl"})
	if err != nil {
		t.Fatal(err)
	}
	st := d.Stats()
	for name, c := range map[string]device.Counter{"requested": st.Requested, "allocated": st.Allocated, "reserved": st.Reserved,
		"communication": st.ByTag[device.Communication]} {
		if c.Current != 3*mib || c.Peak != 3*mib {
			t.Errorf("%s after Hold: current %d peak %d, want %d", name, c.Current, c.Peak, 3*mib)
		}
	}
	if s := d.Summary(); !strings.Contains(s, "at peak: communication 3.0 MiB") {
		t.Errorf("summary without the held bytes at peak:\n%s", s)
	}
	var oom *device.OOMError
	if b, err := d.Alloc(6*mib, device.Label{Tag: device.Parameter}); !errors.As(err, &oom) {
		t.Errorf("Alloc(6 MiB) beside 3 MiB held under 8 MiB: err %v, want an *OOMError", err)
		if b != nil {
			b.Release()
		}
	}
	if live := d.Leaks(); len(live) != 0 {
		t.Errorf("leaks %v: a Held is not a block", live)
	}
	h.Release()
	h.Release()
	st = d.Stats()
	if st.Requested.Current != 0 || st.Reserved.Current != 0 || st.ByTag[device.Communication].Current != 0 || st.ByTag[device.Communication].Peak != 3*mib {
		t.Errorf("after Release: requested %d reserved %d communication %+v, want 0, 0 and the peak kept", st.Requested.Current, st.Reserved.Current, st.ByTag[device.Communication])
	}
	if _, err := d.Hold(-1, device.Label{}); err == nil {
		t.Error("Hold(-1): no error")
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
}
