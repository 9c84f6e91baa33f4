package device

import (
	"fmt"
	"sort"
)

// Allocator geometry. Requests are rounded up to Granularity bytes. Blocks of
// at most smallBlock bytes come from segments of smallSegment bytes; larger
// ones from segments of largeSegment bytes when they are under
// largeThreshold, else from a segment of their own size rounded up to
// smallSegment. The geometry never depends on the capacity: near it, only
// how much of a segment is backed by memory does (commit.go).
const (
	Granularity    = 512
	smallBlock     = 1 << 20
	smallSegment   = 2 << 20
	largeSegment   = 20 << 20
	largeThreshold = 10 << 20
)

// segment is one piece of raw memory from the backend, cut into chunks.
type segment struct {
	mem   Memory
	addr  uint64
	size  int64
	small bool
}

// chunk is a free or allocated range of a segment. The chunks of a segment
// form an address-ordered list. An allocated chunk is always committed
// (backed by memory and counted in Reserved); a free one is committed
// (cached) or not, as a whole.
type chunk struct {
	seg        *segment
	off, size  int64
	prev, next *chunk
	free       bool
	committed  bool
}

func (c *chunk) addr() uint64 { return c.seg.addr + uint64(c.off) }

// whole reports whether the chunk spans its whole segment.
func (c *chunk) whole() bool { return c.prev == nil && c.next == nil }

// pool holds free chunks sorted by (size, address), for best-fit search.
type pool struct{ free []*chunk }

func less(a, b *chunk) bool {
	if a.size != b.size {
		return a.size < b.size
	}
	return a.addr() < b.addr()
}

func (p *pool) insert(c *chunk) {
	i := sort.Search(len(p.free), func(i int) bool { return !less(p.free[i], c) })
	p.free = append(p.free, nil)
	copy(p.free[i+1:], p.free[i:])
	p.free[i] = c
}

func (p *pool) remove(c *chunk) {
	i := sort.Search(len(p.free), func(i int) bool { return !less(p.free[i], c) })
	if i == len(p.free) || p.free[i] != c {
		panic("device: internal error: free chunk missing from its pool")
	}
	p.free = append(p.free[:i], p.free[i+1:]...)
}

// bestFit returns the smallest free chunk of at least n bytes, or nil.
func (p *pool) bestFit(n int64) *chunk {
	i := sort.Search(len(p.free), func(i int) bool { return p.free[i].size >= n })
	if i == len(p.free) {
		return nil
	}
	return p.free[i]
}

// largest returns the size of the largest committed free chunk.
func (p *pool) largest() int64 {
	for i := len(p.free) - 1; i >= 0; i-- {
		if p.free[i].committed {
			return p.free[i].size
		}
	}
	return 0
}

// RoundSize returns the bytes a request of n bytes occupies in a segment.
func RoundSize(n int64) int64 {
	if n <= Granularity {
		return Granularity
	}
	return (n + Granularity - 1) / Granularity * Granularity
}

func (d *Device) poolFor(size int64) *pool {
	if size <= smallBlock {
		return &d.small
	}
	return &d.large
}

func segmentSize(size int64) int64 {
	switch {
	case size <= smallBlock:
		return smallSegment
	case size < largeThreshold:
		return largeSegment
	}
	return (size + smallSegment - 1) / smallSegment * smallSegment
}

// Alloc returns a new block of n bytes labelled l, with one reference. It
// returns an *OOMError when the device's capacity cannot hold it even after
// its unused cached memory is returned. The block's memory is not zeroed.
func (d *Device) Alloc(n int64, l Label) (*Block, error) {
	if n < 0 {
		return nil, fmt.Errorf("device %s: Alloc(%d) for %s: negative size", d.name, n, l.Creator())
	}
	if l.Tag >= NumTags {
		return nil, fmt.Errorf("device %s: Alloc(%d) for %s: invalid tag %d", d.name, n, l.Creator(), l.Tag)
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return nil, fmt.Errorf("device %s: Alloc(%d) for %s: %w", d.name, n, l.Creator(), ErrClosed)
	}
	size := RoundSize(n)
	p := d.place(size)
	if d.injected() {
		return nil, d.oom(n, p, l, ErrInjected)
	}
	if err := d.makeRoom(p, n, l); err != nil {
		return nil, err
	}
	c := p.c
	if c == nil {
		var err error
		if c, err = d.grow(p, n, l); err != nil {
			return nil, err
		}
	}
	if !c.committed {
		if err := d.commitBlock(c, p.block); err != nil {
			if p.c == nil {
				d.ungrow(c)
			}
			return nil, d.oom(n, p, l, err)
		}
	}
	d.poolFor(size).remove(c)
	d.split(c, size)
	if !c.committed {
		d.committed(c)
	}
	c.free = false

	d.seq++
	b := &Block{dev: d, c: c, n: n, label: l, id: d.seq}
	b.refs.Store(1)
	b.older = d.live
	if d.live != nil {
		d.live.newer = b
	}
	d.live = b

	d.countLive(n, c.size, l.Tag)
	d.record(evAlloc, n, c.addr(), l)
	return b, nil
}

// countLive adds a new live allocation of n requested bytes occupying
// size to the counters (and the peaks, and the probes).
func (d *Device) countLive(n, size int64, tag Tag) {
	st := &d.st
	st.Allocated.add(size)
	st.ByTag[tag].add(n)
	st.Requested.add(n)
	if st.Requested.Current == st.Requested.Peak {
		for t := range st.AtPeak {
			st.AtPeak[t] = st.ByTag[t].Current
		}
	}
	d.observe(tag)
}

// MustAlloc is Alloc that panics with the *OOMError (or other error). Op code
// uses it; exported units of work recover the panic and return the error.
func (d *Device) MustAlloc(n int64, l Label) *Block {
	b, err := d.Alloc(n, l)
	if err != nil {
		if oom, ok := err.(*OOMError); ok {
			panic(oom)
		}
		panic(err)
	}
	return b
}

// splits reports whether a free chunk's remainder of rest bytes after a
// block is worth keeping as a free chunk: any remainder in small segments,
// more than smallBlock in large ones.
func splits(rest int64, small bool) bool {
	return rest >= Granularity && (small || rest > smallBlock)
}

// split cuts c down to size when the remainder is worth keeping as a free
// chunk, which stays committed or not as c was.
func (d *Device) split(c *chunk, size int64) {
	rest := c.size - size
	if !splits(rest, c.seg.small) {
		return
	}
	r := &chunk{seg: c.seg, off: c.off + size, size: rest, prev: c, next: c.next, free: true, committed: c.committed}
	if c.next != nil {
		c.next.prev = r
	}
	c.next = r
	c.size = size
	d.segPool(c.seg).insert(r)
}

// grow reserves the new segment that placement p asks for, committing it
// whole when the capacity allows (else only its block will be, by Alloc),
// and returns its single free chunk, already in its pool. A failing backend
// is retried once with the cache returned.
func (d *Device) grow(p placement, n int64, l Label) (*chunk, error) {
	mem, err := d.be.Alloc(p.segSize)
	if err != nil {
		d.releaseCache(true)
		if mem, err = d.be.Alloc(p.segSize); err != nil {
			return nil, d.oom(n, p, l, err)
		}
	}
	s := &segment{mem: mem, addr: d.nextAddr, size: p.segSize, small: p.small}
	d.nextAddr += uint64((p.segSize + smallSegment - 1) / smallSegment * smallSegment)
	d.segments++
	d.st.Segments = d.segments
	c := &chunk{seg: s, size: p.segSize, free: true}
	var committed int64
	if d.room(p.segSize) && d.be.Commit(mem, 0, p.segSize) == nil {
		committed = p.segSize
		c.committed = true
	}
	d.st.Reserved.add(committed)
	d.record(evSegmentAlloc, committed, s.addr, Label{})
	d.segPool(s).insert(c)
	return c, nil
}

// free returns a block's chunk to its pool, merging it with free neighbours.
func (d *Device) free(b *Block) {
	d.mu.Lock()
	defer d.mu.Unlock()
	c := b.c
	if c == nil {
		panic(fmt.Sprintf("device %s: double free of block %d", d.name, b.id))
	}
	st := &d.st
	st.Allocated.sub(c.size)
	st.ByTag[b.label.Tag].sub(b.n)
	st.Requested.sub(b.n)
	d.record(evFree, b.n, c.addr(), b.label)

	if b.newer != nil {
		b.newer.older = b.older
	} else {
		d.live = b.older
	}
	if b.older != nil {
		b.older.newer = b.newer
	}
	b.older, b.newer, b.c = nil, nil, nil

	p := d.segPool(c.seg)
	c.free = true
	if n := c.next; n != nil && n.free {
		p.remove(n)
		d.merge(c, n)
	}
	if pr := c.prev; pr != nil && pr.free {
		p.remove(pr)
		d.merge(pr, c)
		c = pr
	}
	p.insert(c)
	if d.closed && c.whole() {
		d.releaseCache(false) // a closed device gives each segment back as it empties
	}
}

// segPool returns the pool that serves a segment's chunks.
func (d *Device) segPool(s *segment) *pool {
	if s.small {
		return &d.small
	}
	return &d.large
}

// EmptyCache returns every cached segment that holds no live block to the
// backend, like torch.cuda.empty_cache. Live blocks are untouched.
func (d *Device) EmptyCache() {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.releaseCache(false)
}

// releaseCache frees all wholly free segments, committed or not; after a
// failure of the backend it counts as a cache flush in the statistics.
func (d *Device) releaseCache(pressure bool) {
	released := false
	for _, p := range []*pool{&d.small, &d.large} {
		kept := p.free[:0]
		for _, c := range p.free {
			if !c.whole() {
				kept = append(kept, c)
				continue
			}
			var committed int64
			if c.committed {
				committed = c.size
			}
			d.be.Free(c.seg.mem)
			d.segments--
			d.st.Segments = d.segments
			d.st.Reserved.sub(committed)
			d.record(evSegmentFree, committed, c.seg.addr, Label{})
			released = true
		}
		clear(p.free[len(kept):])
		p.free = kept
	}
	if pressure && released {
		d.st.CacheFlushes++
	}
}

// largestFree returns the largest free cached (committed) chunk.
func (d *Device) largestFree() int64 { return max(d.small.largest(), d.large.largest()) }
