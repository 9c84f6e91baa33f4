//go:build linux

package cpu_test

import (
	"testing"

	"github.com/headroom-ml/headroom/device"
	"github.com/headroom-ml/headroom/device/cpu"
)

// TestDecommitReturnsPages: a cached 16 MiB segment whose pages are
// resident gives them back to the operating system when a request on a
// full device needs its memory, although the segment itself stays.
func TestDecommitReturnsPages(t *testing.T) {
	const size = 16 << 20
	d := cpu.New(0, device.Options{Capacity: size})
	defer d.Close()
	b, err := d.Alloc(size, device.Label{Tag: device.Activation}) // a segment of its own, committed whole
	if err != nil {
		t.Fatal(err)
	}
	p := b.Bytes()
	for j := 0; j < len(p); j += 4096 {
		p[j] = 1
	}
	b.Release()
	before := rss(t)
	s, err := d.Alloc(4096, device.Label{Tag: device.Workspace}) // a new small segment: the cache must go
	if err != nil {
		t.Fatal(err)
	}
	defer s.Release()
	dropped := before - rss(t)
	st := d.Stats()
	t.Logf("RSS dropped by %s; reserved %s in %d segments", device.FormatBytes(dropped), device.FormatBytes(st.Reserved.Current), st.Segments)
	// With the 16 MiB given back, the new 2 MiB segment is committed whole.
	if st.Segments != 2 || st.Reserved.Current != 2<<20 || st.CacheFlushes != 1 {
		t.Errorf("segments %d reserved %d flushes %d; want 2, 2 MiB, 1", st.Segments, st.Reserved.Current, st.CacheFlushes)
	}
	if dropped < size*3/4 {
		t.Errorf("RSS dropped by %s when %s of cached memory went back", device.FormatBytes(dropped), device.FormatBytes(size))
	}
}
