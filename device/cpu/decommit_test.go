package cpu_test

import (
	"fmt"
	"testing"

	"github.com/headroom-ml/headroom/device"
	"github.com/headroom-ml/headroom/device/cpu"
)

// TestDecommitKeepsNeighbours fills a full 2 MiB small segment with blocks
// whose edges fall inside pages, frees every other one and makes a
// request that needs their memory back: the live blocks' bytes are intact,
// although the freed chunks share pages with them.
func TestDecommitKeepsNeighbours(t *testing.T) {
	const capacity = 2 << 20
	d := cpu.New(0, device.Options{Capacity: capacity})
	defer d.Close()
	var blocks []*device.Block
	var off int64
	for i := 0; off < capacity; i++ {
		n := min(int64(37<<10+512*(i%5)), capacity-off)
		b, err := d.Alloc(n, device.Label{Tag: device.Activation, Op: fmt.Sprint("b", i)})
		if err != nil {
			t.Fatalf("block %d of %d bytes at offset %d: %v", i, n, off, err)
		}
		fill(b, byte(i+1))
		blocks = append(blocks, b)
		off += device.RoundSize(n)
	}
	var live []*device.Block
	for i, b := range blocks {
		if i%2 == 1 {
			b.Release()
		} else {
			live = append(live, b)
		}
	}
	freed := d.Stats().CachedFree()
	// The small pool has only the freed holes, each too small for 64 KiB:
	// the request needs a new segment, and the holes give their memory back.
	x, err := d.Alloc(64<<10, device.Label{Tag: device.Workspace})
	if err != nil {
		t.Fatal(err)
	}
	if st := d.Stats(); st.CacheFlushes != 1 || st.Reserved.Current != capacity-freed+64<<10 {
		t.Fatalf("after the request: %d flushes, reserved %d; want 1, %d", st.CacheFlushes, st.Reserved.Current, capacity-freed+64<<10)
	}
	for i, b := range live {
		if j := firstNot(b.Bytes(), byte(2*i+1)); j >= 0 {
			t.Errorf("live block %d (%d bytes at %#x) changed at byte %d after its neighbours' memory went back", 2*i, b.Len(), b.Addr(), j)
		}
		b.Release()
	}
	x.Release()
}

func fill(b *device.Block, v byte) {
	p := b.Bytes()
	for i := range p {
		p[i] = v
	}
}

// firstNot returns the index of the first byte of p that is not v, or -1.
func firstNot(p []byte, v byte) int {
	for i, c := range p {
		if c != v {
			return i
		}
	}
	return -1
}
