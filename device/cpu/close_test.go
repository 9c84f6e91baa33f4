//go:build linux

package cpu_test

import (
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/headroom-ml/headroom/device"
	"github.com/headroom-ml/headroom/device/cpu"
)

// rss returns the process's resident set size in bytes (Linux).
func rss(t *testing.T) int64 {
	b, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		t.Fatal(err)
	}
	f := strings.Fields(string(b))
	pages, err := strconv.ParseInt(f[1], 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	return pages * int64(os.Getpagesize())
}

// allocResident allocates n bytes and writes to each of their pages, so
// that the pages are resident.
func allocResident(t *testing.T, d *device.Device, n int64) *device.Block {
	t.Helper()
	b, err := d.Alloc(n, device.Label{Tag: device.Activation})
	if err != nil {
		t.Fatal(err)
	}
	p := b.Bytes()
	for j := 0; j < len(p); j += 4096 {
		p[j] = 1
	}
	return b
}

// TestCloseGivesMemoryBack makes and drops 100 devices, each with an 8 MiB
// block written to (so that its pages are resident) and released: the
// process's RSS stays bounded because Close unmaps the cached segments.
// Without Close the 100 devices would keep 800 MiB resident.
func TestCloseGivesMemoryBack(t *testing.T) {
	const n, size = 100, 8 << 20
	before := rss(t)
	for i := range n {
		d := cpu.New(i, device.Options{})
		allocResident(t, d, size).Release()
		if err := d.Close(); err != nil {
			t.Fatal(err)
		}
	}
	grew := rss(t) - before
	t.Logf("RSS grew by %s over %d devices of %s each", device.FormatBytes(grew), n, device.FormatBytes(size))
	if grew > 4*size {
		t.Errorf("RSS grew by %s after %d closed devices: want at most %s", device.FormatBytes(grew), n, device.FormatBytes(4*size))
	}
}

// TestDecommitReturnsPages: a cached 16 MiB segment whose pages are
// resident gives them back to the operating system when a request on a
// full device needs its memory, although the segment itself stays.
func TestDecommitReturnsPages(t *testing.T) {
	const size = 16 << 20
	d := cpu.New(0, device.Options{Capacity: size})
	defer d.Close()
	allocResident(t, d, size).Release() // a segment of its own, committed whole
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
