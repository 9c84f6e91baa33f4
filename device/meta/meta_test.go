package meta_test

import (
	"errors"
	"testing"

	"github.com/headroom-ml/headroom/device"
	"github.com/headroom-ml/headroom/device/meta"
)

func TestNew(t *testing.T) {
	d := meta.New(2, device.Options{Capacity: 80e9})
	if d.Name() != "meta:2" || d.Kind() != "meta" || d.Capacity() != 80e9 || d.Kernels() != nil {
		t.Errorf("meta.New(2): name %q kind %q capacity %d kernels %v", d.Name(), d.Kind(), d.Capacity(), d.Kernels())
	}
	defer func() {
		if recover() == nil {
			t.Error("meta.New(-1) did not panic")
		}
	}()
	meta.New(-1, device.Options{})
}

// TestNoData: meta blocks have addresses and sizes but no memory, so a
// device can account for far more than the machine holds.
func TestNoData(t *testing.T) {
	d := meta.New(0, device.Options{Capacity: 80 << 30})
	b, err := d.Alloc(70<<30, device.Label{Tag: device.Parameter, Op: "embedding"})
	if err != nil {
		t.Fatal(err)
	}
	if b.Bytes() != nil || b.Ptr() != 0 || b.Len() != 70<<30 || b.Addr() != 1<<32 {
		t.Errorf("meta block: Bytes %v Ptr %d Len %d Addr %#x", b.Bytes() != nil, b.Ptr(), b.Len(), b.Addr())
	}
	st := d.Stats()
	if st.Requested.Current != 70<<30 || st.Reserved.Current != 70<<30 || st.Segments != 1 {
		t.Errorf("stats: %+v", st)
	}
	_, err = d.Alloc(20<<30, device.Label{Tag: device.Activation})
	var oom *device.OOMError
	if !errors.As(err, &oom) || oom.Allocated != 70<<30 || oom.Capacity != 80<<30 {
		t.Errorf("Alloc beyond 80 GiB: %v", err)
	}
	b.Release()
	d.EmptyCache()
	if st := d.Stats(); st.Reserved.Current != 0 || st.Requested.Peak != 70<<30 {
		t.Errorf("after release: %+v", st)
	}
}
