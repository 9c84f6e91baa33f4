package device

// Committing memory near the capacity.
//
// Where a block goes (the free chunk, or a new segment, and the chunk's
// split) never depends on the capacity: it is what an unlimited device
// would do. The capacity bounds only the committed bytes — the parts of
// segments that are backed by memory, which Stats.Reserved counts. A new
// segment is committed whole when the capacity allows; otherwise only its
// block is. When a block needs memory that would pass the capacity, every
// committed free chunk gives its memory back first (a cache flush) if that
// makes room, and the request fails otherwise. A request therefore fails
// exactly when the live blocks' sizes plus its own block's would pass the
// capacity, which no cached memory can change; and since the live blocks
// and their sizes are the same under every capacity, a program that fits
// under a capacity fits under every larger one.

// Timeline kinds of commits and decommits within a segment.
const (
	evSegmentCommit   = "segment_commit"
	evSegmentDecommit = "segment_decommit"
)

// placement is where a request goes: a free chunk c, or a new segment of
// segSize bytes when c is nil; block is the bytes its block will occupy (the
// rounded request, or the whole free space when the remainder is not split
// off).
type placement struct {
	c       *chunk
	segSize int64
	block   int64
	small   bool
}

// place finds where a request of size (rounded) bytes goes, changing
// nothing.
func (d *Device) place(size int64) placement {
	p := placement{small: size <= smallBlock, c: d.poolFor(size).bestFit(size)}
	var space int64
	if p.c != nil {
		space = p.c.size
	} else {
		p.segSize = segmentSize(size)
		space = p.segSize
	}
	p.block = space
	if splits(space-size, p.small) {
		p.block = size
	}
	return p
}

// need returns the bytes that placement p must commit.
func (p placement) need() int64 {
	if p.c != nil && p.c.committed {
		return 0
	}
	return p.block
}

// room reports whether n more committed bytes fit the capacity.
func (d *Device) room(n int64) bool {
	return d.capacity == 0 || d.st.Reserved.Current+n <= d.capacity
}

// makeRoom makes sure placement p's block can be committed: it gives the
// cache back when that is needed and enough, and returns an *OOMError
// (changing nothing) when even that would not do.
func (d *Device) makeRoom(p placement, n int64, l Label) error {
	need := p.need()
	if need == 0 || d.room(need) {
		return nil
	}
	if d.st.Allocated.Current+p.block > d.capacity {
		return d.oom(n, p, l, nil)
	}
	d.decommitCache()
	return nil
}

// commitBlock backs the first n bytes of free, uncommitted chunk c (the
// block about to be cut from it) with memory. When the backend fails (a GPU
// whose driver ran out), the cache gives its memory back and the commit is
// tried once more; the error is returned when that fails too, with nothing
// committed.
func (d *Device) commitBlock(c *chunk, n int64) error {
	err := d.be.Commit(c.seg.mem, c.off, n)
	if err == nil {
		return nil
	}
	d.decommitCache()
	if err2 := d.be.Commit(c.seg.mem, c.off, n); err2 == nil {
		return nil
	}
	return err
}

// ungrow gives back the segment that grow has just made for a request that
// then failed: its one free chunk c, not committed.
func (d *Device) ungrow(c *chunk) {
	d.segPool(c.seg).remove(c)
	d.be.Free(c.seg.mem)
	d.segments--
	d.st.Segments = d.segments
	d.record(evSegmentFree, 0, c.seg.addr, Label{})
}

// committed accounts a chunk whose memory commitBlock has just backed.
func (d *Device) committed(c *chunk) {
	c.committed = true
	d.st.Reserved.add(c.size)
	d.record(evSegmentCommit, c.size, c.addr(), Label{})
}

// decommit gives a free, committed chunk's memory back to the backend; the
// chunk stays in its pool.
func (d *Device) decommit(c *chunk) {
	d.be.Decommit(c.seg.mem, c.off, c.size)
	c.committed = false
	d.st.Reserved.sub(c.size)
	d.record(evSegmentDecommit, c.size, c.addr(), Label{})
}

// decommitCache gives back the memory of every committed free chunk, and
// counts a cache flush if there was any.
func (d *Device) decommitCache() {
	flushed := false
	for _, p := range []*pool{&d.small, &d.large} {
		for _, c := range p.free {
			if c.committed {
				d.decommit(c)
				flushed = true
			}
		}
	}
	if flushed {
		d.st.CacheFlushes++
	}
}

// merge joins free chunk b into the free chunk a just before it (neither
// in a pool). The result is committed only when both were: otherwise the
// committed one gives its memory back, so that a chunk is always committed
// or not as a whole.
func (d *Device) merge(a, b *chunk) {
	switch {
	case a.committed && !b.committed:
		d.decommit(a)
	case b.committed && !a.committed:
		d.decommit(b)
	}
	a.size += b.size
	a.next = b.next
	if b.next != nil {
		b.next.prev = a
	}
}
