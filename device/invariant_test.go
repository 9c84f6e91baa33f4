package device

import (
	"errors"
	"fmt"
	"math/rand"
	"sort"
	"strings"
	"testing"
)

var errFake = errors.New("fake backend: no memory")

// countingBackend is a meta-like backend for white-box tests: it tracks
// the segments it has handed out and which of their 512-byte granules are
// committed (Free knows the segment from Ptr), fails the test on a commit
// of committed memory or a decommit of uncommitted memory, and can be told
// to fail Alloc.
type countingBackend struct {
	granules  map[uintptr][]bool
	next      uintptr
	live      int64 // bytes of segments held
	committed int64 // bytes committed
	fail      func(n int64) bool
	misuse    []string
}

func newCounting() *countingBackend { return &countingBackend{granules: map[uintptr][]bool{}} }

func (c *countingBackend) Kind() string { return "counting" }
func (c *countingBackend) Alloc(n int64) (Memory, error) {
	if c.fail != nil && c.fail(n) {
		return Memory{}, errFake
	}
	c.next += 1 << 40
	c.granules[c.next] = make([]bool, n/Granularity)
	c.live += n
	return Memory{Ptr: c.next}, nil
}
func (c *countingBackend) Free(m Memory) {
	g, ok := c.granules[m.Ptr]
	if !ok {
		panic(fmt.Sprintf("countingBackend: free of unknown memory %#x", m.Ptr))
	}
	for _, on := range g {
		if on {
			c.committed -= Granularity
		}
	}
	delete(c.granules, m.Ptr)
	c.live -= int64(len(g)) * Granularity
}
func (c *countingBackend) Commit(m Memory, off, n int64) error {
	c.mark(m, off, n, true)
	return nil
}
func (c *countingBackend) Decommit(m Memory, off, n int64) { c.mark(m, off, n, false) }

// mark sets the granules of a range committed or not, noting a misuse when
// one already was.
func (c *countingBackend) mark(m Memory, off, n int64, on bool) {
	g := c.granules[m.Ptr]
	for i := off / Granularity; i < (off+n)/Granularity; i++ {
		if g[i] == on {
			c.misuse = append(c.misuse, fmt.Sprintf("segment %#x granule %d: set committed=%v twice", m.Ptr, i, on))
			continue
		}
		g[i] = on
		if on {
			c.committed += Granularity
		} else {
			c.committed -= Granularity
		}
	}
}

// agrees reports whether the granules of a chunk are all committed or all
// not, as the chunk says.
func (c *countingBackend) agrees(ch *chunk) bool {
	g := c.granules[ch.seg.mem.Ptr]
	for i := ch.off / Granularity; i < (ch.off+ch.size)/Granularity; i++ {
		if g[i] != ch.committed {
			return false
		}
	}
	return true
}
func (c *countingBackend) Kernels() Kernels { return nil }

// checkInvariants verifies the allocator's internal structure: every
// segment is tiled exactly by its chunks, pools are sorted and hold exactly
// the free chunks, no two free chunks are adjacent, and the counters agree
// with the blocks and segments that exist.
func checkInvariants(t *testing.T, d *Device) {
	t.Helper()
	d.mu.Lock()
	defer d.mu.Unlock()
	segs := map[*segment][]*chunk{}
	inPool := map[*chunk]bool{}
	for _, p := range []*pool{&d.small, &d.large} {
		for i, c := range p.free {
			if !c.free {
				t.Fatalf("pool holds allocated chunk at %#x", c.addr())
			}
			if i > 0 && !less(p.free[i-1], c) {
				t.Fatalf("pool not sorted at %d", i)
			}
			if (p == &d.small) != c.seg.small {
				t.Fatalf("chunk at %#x in the wrong pool", c.addr())
			}
			inPool[c] = true
			segs[c.seg] = nil
		}
	}
	var requested, allocated, committed int64
	var blocks int
	var tags [NumTags]int64
	for b := d.live; b != nil; b = b.older {
		if b.c == nil || b.c.free {
			t.Fatalf("live list holds freed block %d", b.id)
		}
		if b.older != nil && b.older.newer != b {
			t.Fatalf("live list broken at block %d", b.id)
		}
		if RoundSize(b.n) > b.c.size {
			t.Fatalf("block %d of %d bytes in a chunk of %d", b.id, b.n, b.c.size)
		}
		if !b.c.committed {
			t.Fatalf("block %d in an uncommitted chunk", b.id)
		}
		requested += b.n
		allocated += b.c.size
		tags[b.label.Tag] += b.n
		blocks++
		segs[b.c.seg] = nil
	}
	var segBytes int64
	for s := range segs {
		segBytes += s.size
		// find the first chunk of the segment by walking back from any chunk
		var c *chunk
		for cc := range inPool {
			if cc.seg == s {
				c = cc
				break
			}
		}
		if c == nil {
			for b := d.live; b != nil; b = b.older {
				if b.c.seg == s {
					c = b.c
					break
				}
			}
		}
		for c.prev != nil {
			c = c.prev
		}
		var off int64
		for ; c != nil; c = c.next {
			if c.off != off {
				t.Fatalf("segment %#x: chunk at offset %d, want %d", s.addr, c.off, off)
			}
			if c.next != nil && c.next.prev != c {
				t.Fatalf("segment %#x: broken chunk list at %d", s.addr, c.off)
			}
			if c.free && !inPool[c] {
				t.Fatalf("segment %#x: free chunk at %d not in a pool", s.addr, c.off)
			}
			if c.free && c.next != nil && c.next.free {
				t.Fatalf("segment %#x: adjacent free chunks at %d not merged", s.addr, c.off)
			}
			if be, ok := d.be.(*countingBackend); ok && !be.agrees(c) {
				t.Fatalf("segment %#x: chunk at %d (committed=%v) and the backend's commits disagree", s.addr, c.off, c.committed)
			}
			if c.committed {
				committed += c.size
			}
			off += c.size
		}
		if off != s.size {
			t.Fatalf("segment %#x: chunks cover %d of %d bytes", s.addr, off, s.size)
		}
	}
	st := d.st
	if st.Requested.Current != requested || st.Allocated.Current != allocated || st.Reserved.Current != committed {
		t.Fatalf("counters requested/allocated/reserved = %d/%d/%d, blocks and committed chunks say %d/%d/%d",
			st.Requested.Current, st.Allocated.Current, st.Reserved.Current, requested, allocated, committed)
	}
	if be, ok := d.be.(*countingBackend); ok {
		if be.live != segBytes || be.committed != committed || len(be.misuse) > 0 {
			t.Fatalf("backend holds %d bytes of segments, %d committed, misuse %q; the device's segments are %d bytes, %d committed",
				be.live, be.committed, be.misuse, segBytes, committed)
		}
	}
	if st.Segments != len(segs) || d.segments != len(segs) {
		t.Fatalf("Segments = %d, %d segments exist", st.Segments, len(segs))
	}
	if got := int(st.Requested.Allocs - st.Requested.Frees); got != blocks {
		t.Fatalf("allocs-frees = %d, %d live blocks", got, blocks)
	}
	for tg := range NumTags {
		if st.ByTag[tg].Current != tags[tg] {
			t.Fatalf("ByTag[%s].Current = %d, live blocks hold %d", tg, st.ByTag[tg].Current, tags[tg])
		}
	}
	for _, c := range []Counter{st.Requested, st.Allocated, st.Reserved} {
		if c.Allocated-c.Freed != c.Current || c.Peak < c.Current {
			t.Fatalf("inconsistent counter %+v", c)
		}
	}
	if d.capacity > 0 && st.Reserved.Current > d.capacity {
		t.Fatalf("reserved %d beyond capacity %d", st.Reserved.Current, d.capacity)
	}
}

// TestRandomInvariants drives the allocator with a seeded random mix of
// sizes, frees, retags, EmptyCache and capacity pressure, checking its whole
// structure after every step.
func TestRandomInvariants(t *testing.T) {
	for _, capacity := range []int64{0, 24 << 20, 64 << 20} {
		t.Run(fmt.Sprint("capacity=", capacity), func(t *testing.T) {
			be := newCounting()
			d := New("fake:0", be, Options{Capacity: capacity})
			rng := rand.New(rand.NewSource(7))
			var live []*Block
			var ooms int64
			partial := 0 // steps that saw a segment committed only in part
			for step := range 1500 {
				switch r := rng.Intn(20); {
				case r < 10 || len(live) == 0:
					n := randSize(rng)
					b, err := d.Alloc(n, Label{Tag: Tag(rng.Intn(int(NumTags))), Op: "op", Scope: fmt.Sprint("s", rng.Intn(3))})
					if err != nil {
						var oom *OOMError
						if !errors.As(err, &oom) {
							t.Fatalf("step %d: Alloc(%d): %v", step, n, err)
						}
						ooms++
						break
					}
					live = append(live, b)
				case r < 18:
					i := rng.Intn(len(live))
					live[i].Release()
					live = append(live[:i], live[i+1:]...)
				case r < 19:
					live[rng.Intn(len(live))].Retag(Tag(rng.Intn(int(NumTags))))
				default:
					d.EmptyCache()
				}
				checkInvariants(t, d)
				if partlyCommitted(d) {
					partial++
				}
			}
			if d.Stats().OOMs != ooms {
				t.Fatalf("OOMs = %d, saw %d", d.Stats().OOMs, ooms)
			}
			if capacity > 0 && (ooms == 0 || d.Stats().CacheFlushes == 0 || partial == 0) {
				t.Fatalf("capacity %d: %d OOMs, %d cache flushes, %d steps with a partly committed segment; the test does not exercise pressure",
					capacity, ooms, d.Stats().CacheFlushes, partial)
			}
			t.Logf("%d OOMs, %d cache flushes, %d of 1500 steps with a partly committed segment", ooms, d.Stats().CacheFlushes, partial)
			for _, b := range live {
				b.Release()
			}
			d.EmptyCache()
			checkInvariants(t, d)
			if be.live != 0 || d.Stats().Reserved.Current != 0 || len(d.small.free)+len(d.large.free) != 0 {
				t.Fatalf("after freeing everything and EmptyCache: backend %d, stats %+v", be.live, d.Stats())
			}
		})
	}
}

// partlyCommitted reports whether a free chunk that is not a whole
// segment is uncommitted: a segment backed by memory only in part.
func partlyCommitted(d *Device) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, p := range []*pool{&d.small, &d.large} {
		for _, c := range p.free {
			if !c.committed && !c.whole() {
				return true
			}
		}
	}
	return false
}

// randSize mixes tiny, small, large and huge requests.
func randSize(rng *rand.Rand) int64 {
	switch rng.Intn(10) {
	case 0:
		return int64(rng.Intn(600))
	case 1, 2, 3, 4:
		return int64(rng.Intn(256 << 10))
	case 5, 6:
		return int64(rng.Intn(1<<20) + 1<<19)
	case 7, 8:
		return int64(rng.Intn(8<<20) + 1<<20)
	}
	return int64(rng.Intn(16<<20) + 9<<20)
}

func TestSegmentSize(t *testing.T) {
	tests := []struct{ size, want int64 }{
		{512, 2 << 20},
		{1 << 20, 2 << 20},
		{1<<20 + 512, 20 << 20},
		{10<<20 - 512, 20 << 20},
		{10 << 20, 10 << 20},
		{10<<20 + 512, 12 << 20},
		{30 << 20, 30 << 20},
	}
	for _, tt := range tests {
		if got := segmentSize(tt.size); got != tt.want {
			t.Errorf("segmentSize(%d) = %d, want %d", tt.size, got, tt.want)
		}
	}
}

// TestBackendFailure checks that a failing backend yields an *OOMError that
// wraps the backend's error, after one retry with the cache returned.
func TestBackendFailure(t *testing.T) {
	be := newCounting()
	d := New("fake:0", be, Options{})
	small, err := d.Alloc(1000, Label{Tag: Other})
	if err != nil {
		t.Fatal(err)
	}
	small.Release() // one cached 2 MiB segment

	calls := 0
	be.fail = func(n int64) bool { calls++; return n > 4<<20 }
	_, err = d.Alloc(5<<20, Label{Tag: Activation, Op: "big"})
	var oom *OOMError
	if !errors.As(err, &oom) {
		t.Fatalf("Alloc with failing backend: err = %v, want *OOMError", err)
	}
	if !errors.Is(err, errFake) || oom.Cause != errFake {
		t.Errorf("OOMError does not wrap the backend error: %v", err)
	}
	if oom.Reason != ReasonBackend || oom.Pool != "large" || oom.Block != 5<<20 || oom.NewSegment != 20<<20 || oom.Short != 0 {
		t.Errorf("backend OOM: reason %s pool %s block %d new segment %d short %d", oom.Reason, oom.Pool, oom.Block, oom.NewSegment, oom.Short)
	}
	if calls != 2 {
		t.Errorf("backend called %d times, want 2 (one retry after returning the cache)", calls)
	}
	if !strings.Contains(err.Error(), "backend: "+errFake.Error()) {
		t.Errorf("Error() does not name the backend's error:\n%s", err)
	}
	st := d.Stats()
	if st.Reserved.Current != 0 || st.Segments != 0 || st.CacheFlushes != 1 || st.OOMs != 1 {
		t.Errorf("after backend failure: reserved %d segments %d flushes %d ooms %d, want 0 0 1 1",
			st.Reserved.Current, st.Segments, st.CacheFlushes, st.OOMs)
	}
	checkInvariants(t, d)

	// The backend recovers on the retry: the allocation succeeds.
	calls = 0
	be.fail = func(int64) bool { calls++; return calls == 1 }
	b, err := d.Alloc(5<<20, Label{Tag: Activation})
	if err != nil {
		t.Fatalf("Alloc after a transient backend failure: %v", err)
	}
	b.Release()
	checkInvariants(t, d)
}

// TestPoolOrder checks best-fit order: size first, address second.
func TestPoolOrder(t *testing.T) {
	s := &segment{addr: 1 << 32, size: 1 << 20}
	var p pool
	sizes := []int64{4096, 1024, 4096, 512, 2048}
	var off int64
	for _, n := range sizes {
		p.insert(&chunk{seg: s, off: off, size: n, free: true, committed: true})
		off += n
	}
	var got []int64
	for _, c := range p.free {
		got = append(got, c.size)
	}
	if !sort.SliceIsSorted(got, func(i, j int) bool { return got[i] < got[j] }) {
		t.Fatalf("pool sizes %v not sorted", got)
	}
	if c := p.bestFit(3000); c.size != 4096 || c.off != 0 {
		t.Errorf("bestFit(3000) = size %d off %d, want the lower-addressed 4096-byte chunk at offset 0", c.size, c.off)
	}
	if c := p.bestFit(8192); c != nil {
		t.Errorf("bestFit(8192) = %d bytes, want nil", c.size)
	}
	if p.largest() != 4096 {
		t.Errorf("largest = %d, want 4096", p.largest())
	}
	for len(p.free) > 0 {
		p.remove(p.free[len(p.free)/2])
	}
	if p.largest() != 0 || p.bestFit(1) != nil {
		t.Errorf("empty pool not empty")
	}
}
