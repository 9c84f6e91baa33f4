package device

import (
	"fmt"
	"sync/atomic"
)

// Block is one live allocation: reference-counted device memory with a label.
// A block starts with one reference; Retain adds one, Release drops one, and
// the memory goes back to the device's cache when the last is dropped — at
// that moment, never later, and never by Go's garbage collector.
type Block struct {
	dev      *Device
	c        *chunk // nil once freed
	n        int64  // requested bytes
	label    Label
	id       uint64
	refs     atomic.Int32
	saved    atomic.Int32 // the references that are saved ones (RetainSaved)
	version  atomic.Uint64
	resident bool // MarkResident: held by the backend, never a leak

	// the device's list of live blocks, newest first
	older, newer *Block
}

// Device returns the device the block lives on.
func (b *Block) Device() *Device { return b.dev }

// Len returns the bytes that were requested for the block.
func (b *Block) Len() int64 { return b.n }

// BlockSize returns the bytes the block occupies in its segment: the request
// rounded up to the allocator's granularity (RoundSize), or the whole free
// chunk it was cut from when the remainder was too small to split off (at
// most 1 MiB more, in large segments only).
func (b *Block) BlockSize() int64 {
	c := b.chunk("BlockSize")
	return c.size
}

// Label returns what the block holds and who created it.
func (b *Block) Label() Label {
	b.dev.mu.Lock()
	defer b.dev.mu.Unlock()
	return b.label
}

// ID returns the block's allocation sequence number on its device (1, 2, …).
func (b *Block) ID() uint64 { return b.id }

// Addr returns the block's address in the device's (virtual) address space.
// Addresses are deterministic: the same allocation sequence gives the same
// addresses on every device kind.
func (b *Block) Addr() uint64 {
	c := b.chunk("Addr")
	return c.seg.addr + uint64(c.off)
}

// Bytes returns the block's host memory, exactly Len bytes long, or nil when
// the device's memory is not host-addressable (meta).
func (b *Block) Bytes() []byte {
	c := b.chunk("Bytes")
	h := c.seg.mem.Host
	if h == nil {
		return nil
	}
	return h[c.off : c.off+b.n : c.off+b.n]
}

// Ptr returns the device address of the block's first byte on backends whose
// memory is not host-addressable (0 on meta).
func (b *Block) Ptr() uintptr {
	c := b.chunk("Ptr")
	if c.seg.mem.Ptr == 0 {
		return 0
	}
	return c.seg.mem.Ptr + uintptr(c.off)
}

// MarkResident marks a block that a backend holds for the device's whole
// life (a GPU library's workspace, released by the backend at Close): it
// counts as memory like any block, but Leaks never reports it.
func (b *Block) MarkResident() {
	b.dev.mu.Lock()
	b.resident = true
	b.dev.mu.Unlock()
}

// Refs returns the current number of references.
func (b *Block) Refs() int { return int(b.refs.Load()) }

// Retain adds a reference. It panics on a freed block, leaving it freed.
func (b *Block) Retain() {
	for {
		r := b.refs.Load()
		if r <= 0 {
			panic(fmt.Sprintf("device %s: Retain of freed block %d (%s, %d bytes)", b.dev.name, b.id, b.label.Creator(), b.n))
		}
		if b.refs.CompareAndSwap(r, r+1) {
			return
		}
	}
}

// RetainSaved adds a reference that is kept for a later computation — a
// tensor autograd saved for backward — and counts it as such;
// ReleaseSaved drops one. The device only reports the count (Saved,
// Device.Unsaved): a live activation block that none of its references
// saves is held only by handles, which can release it.
func (b *Block) RetainSaved() {
	b.Retain()
	b.saved.Add(1)
}

// ReleaseSaved drops a reference added by RetainSaved.
func (b *Block) ReleaseSaved() {
	if b.saved.Add(-1) < 0 {
		panic(fmt.Sprintf("device %s: block %d (%s, %d bytes) released as saved more often than retained so", b.dev.name, b.id, b.label.Creator(), b.n))
	}
	b.Release()
}

// Saved returns how many of the block's references are saved ones.
func (b *Block) Saved() int { return int(b.saved.Load()) }

// Release drops a reference and frees the block when none is left.
func (b *Block) Release() {
	switch r := b.refs.Add(-1); {
	case r == 0:
		b.dev.free(b)
	case r < 0:
		panic(fmt.Sprintf("device %s: block %d (%s, %d bytes) released more often than retained", b.dev.name, b.id, b.label.Creator(), b.n))
	}
}

// Freed reports whether the block's memory has gone back to the device.
func (b *Block) Freed() bool { return b.refs.Load() <= 0 }

// Version returns the block's write counter (see Bump).
func (b *Block) Version() uint64 { return b.version.Load() }

// Bump increments the write counter. In-place writes call it so that readers
// who saved the block can detect that it changed under them.
func (b *Block) Bump() { b.version.Add(1) }

// Retag moves the block to another tag. The accounting treats it as a free
// under the old tag and an allocation under the new one.
func (b *Block) Retag(t Tag) {
	if t >= NumTags {
		panic(fmt.Sprintf("device %s: Retag to invalid tag %d", b.dev.name, t))
	}
	d := b.dev
	d.mu.Lock()
	defer d.mu.Unlock()
	if b.c == nil {
		panic(fmt.Sprintf("device %s: Retag of freed block %d", d.name, b.id))
	}
	if b.label.Tag == t {
		return
	}
	d.st.ByTag[b.label.Tag].sub(b.n)
	b.label.Tag = t
	d.st.ByTag[t].add(b.n)
	d.observe(t)
	d.record(evRetag, b.n, b.Addr(), b.label)
}

// Relabel sets the op and scope that are charged with the block.
func (b *Block) Relabel(op, scope string) {
	b.dev.mu.Lock()
	defer b.dev.mu.Unlock()
	b.label.Op, b.label.Scope = op, scope
}

func (b *Block) chunk(what string) *chunk {
	c := b.c
	if c == nil {
		panic(fmt.Sprintf("device %s: %s of freed block %d (%s, %d bytes)", b.dev.name, what, b.id, b.label.Creator(), b.n))
	}
	return c
}
