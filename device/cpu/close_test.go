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

// TestCloseGivesMemoryBack makes and drops 100 devices, each with a 32 MiB
// block written to (so that its pages are resident) and released: the
// process's RSS stays bounded because Close unmaps the cached segments.
// Without Close the 100 devices would keep 3.2 GiB resident.
func TestCloseGivesMemoryBack(t *testing.T) {
	const n, size = 100, 32 << 20
	before := rss(t)
	for i := range n {
		d := cpu.New(i, device.Options{})
		b, err := d.Alloc(size, device.Label{Tag: device.Activation})
		if err != nil {
			t.Fatal(err)
		}
		p := b.Bytes()
		for j := 0; j < len(p); j += 4096 {
			p[j] = 1
		}
		b.Release()
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
