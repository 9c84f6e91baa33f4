package device

import (
	"fmt"
	"sync"
)

// Memory is raw memory that a Backend hands to the allocator: one segment.
type Memory struct {
	// Host holds the bytes when the memory is addressable by the Go program
	// (the cpu device); nil otherwise (meta, and accelerators).
	Host []byte
	// Ptr is the device address of the memory on backends whose memory the
	// host cannot address.
	Ptr uintptr
}

// Backend is what one kind of device supplies under the shared caching
// allocator: raw segments and the kernels that compute on them.
type Backend interface {
	// Kind names the kind of device: "cpu", "meta", "cuda".
	Kind() string
	// Alloc obtains a segment of n bytes of address space. It is called
	// only when the cache cannot serve a request, so it may be slow. Only
	// the ranges the allocator commits count as memory in use.
	Alloc(n int64) (Memory, error)
	// Commit backs the n bytes at offset off of a segment with memory, and
	// Decommit gives them back, keeping their addresses; the allocator
	// commits a range before any block uses it and decommits only free
	// ranges, and never commits a byte twice. A backend that backs pages
	// lazily (mmap) needs nothing for Commit and returns whole pages on
	// Decommit. Commit fails only when the backend itself runs short (a GPU
	// whose driver has no physical memory left): it then commits nothing,
	// and the allocator reports an *OOMError with the error as its Cause.
	// Decommit may not fail.
	Commit(m Memory, off, n int64) error
	Decommit(m Memory, off, n int64)
	// Free returns a segment obtained from Alloc, committed or not.
	Free(m Memory)
	// Kernels returns the compute seam, or nil for a device that computes
	// nothing (meta).
	Kernels() Kernels
}

// Options configures a Device. The zero value is an unlimited device.
type Options struct {
	// Capacity bounds the bytes the device may reserve; 0 means unlimited.
	Capacity int64
}

// Device is one memory space with its own caching allocator and accounting.
// Every tensor byte on a device is a Block obtained from Alloc. A Device is
// safe for concurrent use.
type Device struct {
	name string
	be   Backend

	mu       sync.Mutex
	capacity int64
	small    pool // blocks of at most smallBlock bytes, carved from smallSegment segments
	large    pool
	nextAddr uint64
	segments int
	st       Stats
	live     *Block // newest live block; the list runs through Block.older
	seq      uint64
	tl       *recorder
	probes   []*Probe
	closed   bool // Close was called: no new blocks, segments go back as they empty
	inject   int  // InjectOOM: allocations until the one that fails (0: none)
}

// New makes a device named name (for example "cpu:0") over a backend.
// Backends normally wrap this in their own constructor (cpu.New, meta.New).
func New(name string, b Backend, o Options) *Device {
	if o.Capacity < 0 {
		panic(fmt.Sprintf("device.New(%q): negative capacity %d", name, o.Capacity))
	}
	d := &Device{name: name, be: b, capacity: o.Capacity, nextAddr: 1 << 32}
	d.st.Device = name
	d.st.Capacity = o.Capacity
	return d
}

// Name returns the device's name, for example "cpu:0" or "meta".
func (d *Device) Name() string { return d.name }

// String returns the device's name.
func (d *Device) String() string { return d.name }

// Kind returns the backend kind: "cpu", "meta", …
func (d *Device) Kind() string { return d.be.Kind() }

// Kernels returns the device's compute seam, nil for meta.
func (d *Device) Kernels() Kernels { return d.be.Kernels() }

// Capacity returns the byte limit on reserved memory (0: unlimited).
func (d *Device) Capacity() int64 {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.capacity
}

// SetCapacity changes the limit on reserved memory (0: unlimited). Memory
// already reserved beyond a new, lower limit stays until it is freed and
// EmptyCache (or an allocation under pressure) returns it.
func (d *Device) SetCapacity(n int64) {
	if n < 0 {
		panic(fmt.Sprintf("device %s: SetCapacity(%d): negative capacity", d.name, n))
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	d.capacity = n
	d.st.Capacity = n
}
