package device

import (
	"fmt"
	"sync"
)

// Held is device memory that a library of the backend allocated by itself,
// outside the allocator (NCCL's communication buffers), recorded by Hold.
type Held struct {
	d    *Device
	n    int64
	l    Label
	once sync.Once
}

// Hold records n bytes of the device's memory that a backend library
// allocated outside the allocator — measured, say, as the driver's used
// bytes before and after the library's initialisation — so that the
// accounting sees them: until Release they count as one live allocation
// labelled l in Requested, Allocated, Reserved and l.Tag's counter, so
// Summary, the peaks, OOM reports and the capacity (which bounds Reserved)
// include them. No segment or block is made and nothing is allocated; a
// Held is never a leak (it is resident, like a library's workspace). The
// memory exists already, so Hold never fails for lack of capacity: later
// allocations see less room.
func (d *Device) Hold(n int64, l Label) (*Held, error) {
	if n < 0 || l.Tag >= NumTags {
		return nil, fmt.Errorf("device %s: Hold(%d) for %s: want bytes ≥ 0 and a valid tag (got tag %d)", d.name, n, l.Creator(), l.Tag)
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return nil, fmt.Errorf("device %s: Hold(%d) for %s: %w", d.name, n, l.Creator(), ErrClosed)
	}
	d.st.Reserved.add(n)
	d.countLive(n, n, l.Tag)
	return &Held{d: d, n: n, l: l}, nil
}

// Bytes returns the bytes recorded.
func (h *Held) Bytes() int64 { return h.n }

// Release ends the record (the library freed its memory). It is
// idempotent.
func (h *Held) Release() {
	h.once.Do(func() {
		d := h.d
		d.mu.Lock()
		defer d.mu.Unlock()
		st := &d.st
		st.Reserved.sub(h.n)
		st.Allocated.sub(h.n)
		st.ByTag[h.l.Tag].sub(h.n)
		st.Requested.sub(h.n)
	})
}
