package device_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/headroom-ml/headroom/device"
	"github.com/headroom-ml/headroom/device/meta"
)

// TestClose: Close returns the cache at once, reports live blocks as a
// leak, gives their segments back when they are released, refuses new
// allocations and is idempotent.
func TestClose(t *testing.T) {
	d := meta.New(0, device.Options{})
	kept, err := d.Alloc(3<<20, device.Label{Tag: device.Activation, Op: "relu", Scope: "fc1"})
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range []int64{1000, 25 << 20} {
		b, err := d.Alloc(n, device.Label{Tag: device.Workspace})
		if err != nil {
			t.Fatal(err)
		}
		b.Release()
	}
	// Segments: one small (2 MiB, empty), one large for 3 MiB (20 MiB,
	// held by kept), one of its own for 25 MiB (26 MiB, empty).
	if got, want := d.Stats().Reserved.Current, int64(2<<20+20<<20+26<<20); got != want {
		t.Fatalf("reserved before Close = %d, want %d", got, want)
	}
	err = d.Close()
	var leak *device.LeakError
	if !errors.As(err, &leak) {
		t.Fatalf("Close with a live block = %v, want a *LeakError", err)
	}
	if leak.Bytes != 3<<20 || leak.Blocks != 1 || len(leak.Groups) != 1 || leak.Groups[0].Creator != "fc1/relu" {
		t.Errorf("leak = %+v, want 3 MiB in one block made by fc1/relu", leak)
	}
	if !strings.Contains(err.Error(), "fc1/relu") {
		t.Errorf("Close error %q does not name the creator", err)
	}
	if got, want := d.Stats().Reserved.Current, int64(20<<20); got != want {
		t.Errorf("reserved after Close = %d, want %d (only the live block's segment)", got, want)
	}
	if _, err := d.Alloc(10, device.Label{}); !errors.Is(err, device.ErrClosed) {
		t.Errorf("Alloc after Close = %v, want ErrClosed", err)
	}
	kept.Release()
	if st := d.Stats(); st.Reserved.Current != 0 || st.Segments != 0 {
		t.Errorf("after the last block: reserved %d in %d segments, want none", st.Reserved.Current, st.Segments)
	}
	if err := d.Close(); err != nil || !d.Closed() {
		t.Errorf("second Close = %v (closed %v), want nil", err, d.Closed())
	}
}
