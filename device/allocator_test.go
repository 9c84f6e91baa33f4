package device_test

import (
	"testing"

	"github.com/headroom-ml/headroom/device"
	"github.com/headroom-ml/headroom/device/meta"
)

const (
	kib = int64(1) << 10
	mib = int64(1) << 20
)

// base is the address of a device's first segment; segments are laid out
// at 2 MiB-aligned addresses in the order they are reserved.
const base = uint64(1) << 32

func mustAlloc(t *testing.T, d *device.Device, n int64, tag device.Tag, op string) *device.Block {
	t.Helper()
	b, err := d.Alloc(n, device.Label{Tag: tag, Op: op})
	if err != nil {
		t.Fatalf("Alloc(%d, %s): %v", n, tag, err)
	}
	return b
}

func wantCounter(t *testing.T, what string, got, want device.Counter) {
	t.Helper()
	if got != want {
		t.Errorf("%s = %+v\n want %+v", what, got, want)
	}
	if got.Allocated-got.Freed != got.Current {
		t.Errorf("%s: Allocated-Freed = %d, Current = %d", what, got.Allocated-got.Freed, got.Current)
	}
}

func TestRoundSize(t *testing.T) {
	tests := []struct{ n, want int64 }{
		{0, 512}, {1, 512}, {511, 512}, {512, 512}, {513, 1024},
		{1000, 1024}, {3000, 3072}, {1 << 20, 1 << 20}, {1<<20 + 1, 1<<20 + 512},
	}
	for _, tt := range tests {
		if got := device.RoundSize(tt.n); got != tt.want {
			t.Errorf("RoundSize(%d) = %d, want %d", tt.n, got, tt.want)
		}
	}
}

// TestScriptedCounters checks every counter after a scripted sequence whose
// numbers follow from the allocator's rules: requests round up to 512 B,
// blocks of at most 1 MiB share 2 MiB segments, larger ones under 10 MiB
// come from 20 MiB segments.
func TestScriptedCounters(t *testing.T) {
	d := meta.New(0, device.Options{})
	a := mustAlloc(t, d, 1000, device.Parameter, "a")  // 1024 in small segment 1 at offset 0
	b := mustAlloc(t, d, 3000, device.Activation, "b") // 3072 at offset 1024
	c := mustAlloc(t, d, 2*mib, device.Optimizer, "c") // 2 MiB in a new 20 MiB segment
	if a.Addr() != base || b.Addr() != base+1024 || c.Addr() != base+2<<20 {
		t.Errorf("addresses %#x %#x %#x, want %#x %#x %#x", a.Addr(), b.Addr(), c.Addr(), base, base+1024, base+2<<20)
	}
	if a.Len() != 1000 || a.BlockSize() != 1024 || b.BlockSize() != 3072 || c.BlockSize() != 2*mib {
		t.Errorf("sizes: a %d/%d b %d c %d", a.Len(), a.BlockSize(), b.BlockSize(), c.BlockSize())
	}
	if a.ID() != 1 || b.ID() != 2 || c.ID() != 3 {
		t.Errorf("IDs %d %d %d, want 1 2 3", a.ID(), b.ID(), c.ID())
	}
	peakReq := 1000 + 3000 + 2*mib
	b.Release()
	e := mustAlloc(t, d, 100, device.Activation, "e") // reuses b's place
	if e.Addr() != base+1024 {
		t.Errorf("e.Addr = %#x, want b's old address %#x", e.Addr(), base+1024)
	}

	st := d.Stats()
	if st.Device != "meta:0" || st.Capacity != 0 {
		t.Errorf("Device, Capacity = %q, %d", st.Device, st.Capacity)
	}
	wantCounter(t, "Requested", st.Requested, device.Counter{
		Current: 1000 + 2*mib + 100, Peak: peakReq,
		Allocated: 1000 + 3000 + 2*mib + 100, Freed: 3000, Allocs: 4, Frees: 1,
	})
	wantCounter(t, "Allocated", st.Allocated, device.Counter{
		Current: 1024 + 2*mib + 512, Peak: 1024 + 3072 + 2*mib,
		Allocated: 1024 + 3072 + 2*mib + 512, Freed: 3072, Allocs: 4, Frees: 1,
	})
	wantCounter(t, "Reserved", st.Reserved, device.Counter{
		Current: 22 * mib, Peak: 22 * mib, Allocated: 22 * mib, Allocs: 2,
	})
	wantCounter(t, "ByTag[Parameter]", st.Tag(device.Parameter), device.Counter{Current: 1000, Peak: 1000, Allocated: 1000, Allocs: 1})
	wantCounter(t, "ByTag[Activation]", st.Tag(device.Activation), device.Counter{
		Current: 100, Peak: 3000, Allocated: 3100, Freed: 3000, Allocs: 2, Frees: 1,
	})
	wantCounter(t, "ByTag[Optimizer]", st.Tag(device.Optimizer), device.Counter{Current: 2 * mib, Peak: 2 * mib, Allocated: 2 * mib, Allocs: 1})
	for _, tg := range []device.Tag{device.Gradient, device.Workspace, device.Communication, device.Other} {
		wantCounter(t, "ByTag["+tg.String()+"]", st.Tag(tg), device.Counter{})
	}
	wantAtPeak := [device.NumTags]int64{device.Parameter: 1000, device.Activation: 3000, device.Optimizer: 2 * mib}
	if st.AtPeak != wantAtPeak {
		t.Errorf("AtPeak = %v, want %v", st.AtPeak, wantAtPeak)
	}
	if st.Segments != 2 || st.OOMs != 0 || st.CacheFlushes != 0 {
		t.Errorf("Segments %d OOMs %d CacheFlushes %d, want 2 0 0", st.Segments, st.OOMs, st.CacheFlushes)
	}
	// free: small segment 2 MiB-1024-512, large segment 18 MiB
	if st.LargestFree != 18*mib || st.CachedFree() != 22*mib-(1024+2*mib+512) {
		t.Errorf("LargestFree %d CachedFree %d", st.LargestFree, st.CachedFree())
	}
	if d.PeakBytes() != peakReq || d.CurrentBytes() != 1000+2*mib+100 || d.LiveBlocks() != 3 {
		t.Errorf("PeakBytes %d CurrentBytes %d LiveBlocks %d", d.PeakBytes(), d.CurrentBytes(), d.LiveBlocks())
	}

	// ResetPeak: every peak drops to the current value; AtPeak is now.
	d.ResetPeak()
	st = d.Stats()
	if st.Requested.Peak != st.Requested.Current || st.Allocated.Peak != st.Allocated.Current ||
		st.Reserved.Peak != st.Reserved.Current || st.Tag(device.Activation).Peak != 100 {
		t.Errorf("after ResetPeak: peaks %d %d %d act %d", st.Requested.Peak, st.Allocated.Peak, st.Reserved.Peak, st.Tag(device.Activation).Peak)
	}
	wantAtPeak[device.Activation] = 100
	if st.AtPeak != wantAtPeak {
		t.Errorf("AtPeak after ResetPeak = %v, want %v", st.AtPeak, wantAtPeak)
	}
	if st.Requested.Allocated != 1000+3000+2*mib+100 || st.Requested.Allocs != 4 {
		t.Errorf("ResetPeak changed totals: %+v", st.Requested)
	}
	// A new, smaller high-water mark is measured from the reset.
	c.Release()
	f := mustAlloc(t, d, 5000, device.Workspace, "f")
	st = d.Stats()
	if st.Requested.Peak != 1000+2*mib+100 {
		t.Errorf("peak after reset and free = %d, want the reset value %d", st.Requested.Peak, 1000+2*mib+100)
	}
	g := mustAlloc(t, d, 3*mib, device.Gradient, "g")
	st = d.Stats()
	if st.Requested.Peak != 1000+100+5000+3*mib {
		t.Errorf("new peak = %d, want %d", st.Requested.Peak, 1000+100+5000+3*mib)
	}
	wantAtPeak = [device.NumTags]int64{device.Parameter: 1000, device.Activation: 100, device.Workspace: 5000, device.Gradient: 3 * mib}
	if st.AtPeak != wantAtPeak {
		t.Errorf("AtPeak = %v, want %v", st.AtPeak, wantAtPeak)
	}
	for _, x := range []*device.Block{a, e, f, g} {
		x.Release()
	}
	st = d.Stats()
	if st.Requested.Current != 0 || st.Allocated.Current != 0 || d.LiveBlocks() != 0 {
		t.Errorf("after releasing all: %+v", st)
	}
	if st.Requested.Allocs != 6 || st.Requested.Frees != 6 || st.Requested.Allocated != st.Requested.Freed {
		t.Errorf("totals after releasing all: %+v", st.Requested)
	}
}

// TestPeakAcrossTags checks that AtPeak records the breakdown at the moment
// of the peak, not the per-tag peaks (which may occur at other times).
func TestPeakAcrossTags(t *testing.T) {
	d := meta.New(0, device.Options{})
	act := mustAlloc(t, d, 10*kib, device.Activation, "fwd")
	ws := mustAlloc(t, d, 2*kib, device.Workspace, "fwd")
	act.Release()
	ws.Release()
	gr := mustAlloc(t, d, 11*kib, device.Gradient, "bwd") // below the 12 KiB peak
	st := d.Stats()
	want := [device.NumTags]int64{device.Activation: 10 * kib, device.Workspace: 2 * kib}
	if st.AtPeak != want || st.Requested.Peak != 12*kib {
		t.Errorf("AtPeak = %v peak %d, want %v peak %d", st.AtPeak, st.Requested.Peak, want, 12*kib)
	}
	if st.Tag(device.Gradient).Peak != 11*kib {
		t.Errorf("gradient peak %d", st.Tag(device.Gradient).Peak)
	}
	gr.Release()
}

func TestZeroSizeAndBadRequests(t *testing.T) {
	d := meta.New(0, device.Options{})
	z := mustAlloc(t, d, 0, device.Other, "empty")
	if z.Len() != 0 || z.BlockSize() != 512 {
		t.Errorf("zero-size block: Len %d BlockSize %d, want 0 512", z.Len(), z.BlockSize())
	}
	st := d.Stats()
	if st.Requested.Current != 0 || st.Allocated.Current != 512 || st.Requested.Allocs != 1 {
		t.Errorf("zero-size block counters: %+v %+v", st.Requested, st.Allocated)
	}
	z.Release()
	if _, err := d.Alloc(-1, device.Label{}); err == nil {
		t.Error("Alloc(-1) succeeded")
	}
	if _, err := d.Alloc(1, device.Label{Tag: device.NumTags}); err == nil {
		t.Error("Alloc with an invalid tag succeeded")
	}
	if st := d.Stats(); st.Requested.Allocs != 1 || st.OOMs != 0 {
		t.Errorf("bad requests changed the counters: %+v", st)
	}
}

// TestReuse: a freed block's place serves the next equal request; no new
// segment is reserved.
func TestReuse(t *testing.T) {
	for _, n := range []int64{1000, 700 * kib, 5 * mib, 30 * mib} {
		d := meta.New(0, device.Options{})
		a := mustAlloc(t, d, n, device.Activation, "x")
		addr := a.Addr()
		a.Release()
		b := mustAlloc(t, d, n, device.Activation, "x")
		st := d.Stats()
		if b.Addr() != addr || st.Segments != 1 || st.Reserved.Allocs != 1 {
			t.Errorf("n=%d: reuse gave %#x (first %#x), %d segments, %d reserved", n, b.Addr(), addr, st.Segments, st.Reserved.Allocs)
		}
		b.Release()
	}
}

// TestSplitCoalesce: A, B, C in one small segment; freeing B then A merges
// them into one chunk that serves a request of A+B at A's address.
func TestSplitCoalesce(t *testing.T) {
	d := meta.New(0, device.Options{})
	a := mustAlloc(t, d, 4*kib, device.Activation, "a")
	b := mustAlloc(t, d, 8*kib, device.Activation, "b")
	c := mustAlloc(t, d, 16*kib, device.Activation, "c")
	if b.Addr() != a.Addr()+uint64(4*kib) || c.Addr() != b.Addr()+uint64(8*kib) {
		t.Fatalf("blocks not contiguous: %#x %#x %#x", a.Addr(), b.Addr(), c.Addr())
	}
	aAddr := a.Addr()
	b.Release()
	a.Release()
	st := d.Stats()
	// free chunks: [0, 12K) and [28K, 2M)
	if st.LargestFree != 2*mib-28*kib || st.CachedFree() != 2*mib-16*kib {
		t.Errorf("LargestFree %d CachedFree %d", st.LargestFree, st.CachedFree())
	}
	ab := mustAlloc(t, d, 12*kib, device.Activation, "ab")
	if ab.Addr() != aAddr {
		t.Errorf("A+B request at %#x, want the merged chunk at %#x", ab.Addr(), aAddr)
	}
	// Freeing everything merges back into one whole segment, which
	// EmptyCache returns.
	ab.Release()
	c.Release()
	st = d.Stats()
	if st.LargestFree != 2*mib || st.Segments != 1 {
		t.Errorf("after freeing all: LargestFree %d Segments %d, want one whole 2 MiB chunk", st.LargestFree, st.Segments)
	}
	d.EmptyCache()
	if st := d.Stats(); st.Segments != 0 || st.Reserved.Current != 0 {
		t.Errorf("EmptyCache left %d segments, %d bytes", st.Segments, st.Reserved.Current)
	}
}

// TestBestFit: the smallest adequate free chunk serves a request; ties go
// to the lower address.
func TestBestFit(t *testing.T) {
	d := meta.New(0, device.Options{})
	var holes []*device.Block
	var addrs []uint64
	var pins []*device.Block
	for _, n := range []int64{8 * kib, 4 * kib, 16 * kib, 4 * kib} {
		h := mustAlloc(t, d, n, device.Workspace, "hole")
		holes = append(holes, h)
		addrs = append(addrs, h.Addr())
		pins = append(pins, mustAlloc(t, d, 512, device.Parameter, "pin"))
	}
	for _, h := range holes {
		h.Release()
	}
	tests := []struct {
		n    int64
		want uint64
	}{
		{3 * kib, addrs[1]},  // the lower of the two 4 KiB holes
		{4 * kib, addrs[3]},  // the other 4 KiB hole
		{6 * kib, addrs[0]},  // 8 KiB
		{10 * kib, addrs[2]}, // 16 KiB
	}
	for _, tt := range tests {
		b := mustAlloc(t, d, tt.n, device.Activation, "fit")
		if b.Addr() != tt.want {
			t.Errorf("Alloc(%d) at %#x, want %#x", tt.n, b.Addr(), tt.want)
		}
		defer b.Release()
	}
	// The 16 KiB hole kept its 6 KiB remainder; the next 6 KiB request fits
	// there rather than in the big tail of the segment.
	r := mustAlloc(t, d, 6*kib, device.Activation, "rest")
	if r.Addr() != addrs[2]+uint64(10*kib) {
		t.Errorf("remainder request at %#x, want %#x", r.Addr(), addrs[2]+uint64(10*kib))
	}
	r.Release()
	for _, p := range pins {
		p.Release()
	}
	if st := d.Stats(); st.Segments != 1 {
		t.Errorf("%d segments, want 1", st.Segments)
	}
}

// TestSegmentSizes: a request's first segment is 2 MiB (≤ 1 MiB), 20 MiB
// (< 10 MiB) or its own size rounded up to 2 MiB.
func TestSegmentSizes(t *testing.T) {
	tests := []struct {
		n, seg, block int64
	}{
		{1 * kib, 2 * mib, 1 * kib},
		{1 * mib, 2 * mib, 1 * mib},
		{1*mib + 1, 20 * mib, 1*mib + 512},
		{5 * mib, 20 * mib, 5 * mib},
		{10*mib - 1000, 20 * mib, 10*mib - 512},
		{10*mib - 1, 10 * mib, 10 * mib}, // rounds to 10 MiB: its own segment
		{10 * mib, 10 * mib, 10 * mib},
		{10*mib + 1, 12 * mib, 10*mib + 512},
		{30 * mib, 30 * mib, 30 * mib},
	}
	for _, tt := range tests {
		d := meta.New(0, device.Options{})
		b := mustAlloc(t, d, tt.n, device.Activation, "x")
		st := d.Stats()
		if st.Reserved.Current != tt.seg || st.Segments != 1 || b.BlockSize() != tt.block {
			t.Errorf("Alloc(%d): reserved %d in %d segments, block %d; want %d in 1, block %d",
				tt.n, st.Reserved.Current, st.Segments, b.BlockSize(), tt.seg, tt.block)
		}
		b.Release()
	}
}

// TestLargeNoSplit: in a large segment a remainder of at most 1 MiB stays
// with the block (BlockSize grows), a larger one is split off.
func TestLargeNoSplit(t *testing.T) {
	d := meta.New(0, device.Options{})
	a := mustAlloc(t, d, 5*mib, device.Activation, "a") // 20 MiB segment, 15 MiB free
	b := mustAlloc(t, d, 14*mib+512, device.Activation, "b")
	if b.BlockSize() != 15*mib || b.Addr() != a.Addr()+uint64(5*mib) {
		t.Errorf("b: BlockSize %d at %#x, want the whole 15 MiB remainder at %#x", b.BlockSize(), b.Addr(), a.Addr()+uint64(5*mib))
	}
	st := d.Stats()
	if st.Allocated.Current != 20*mib || st.Requested.Current != 19*mib+512 || st.Segments != 1 {
		t.Errorf("Allocated %d Requested %d Segments %d", st.Allocated.Current, st.Requested.Current, st.Segments)
	}
	b.Release()
	c := mustAlloc(t, d, 13*mib, device.Activation, "c") // 2 MiB remainder: split
	if c.BlockSize() != 13*mib || d.Stats().LargestFree != 2*mib {
		t.Errorf("c: BlockSize %d, LargestFree %d", c.BlockSize(), d.Stats().LargestFree)
	}
	// Small requests never come from a large segment.
	s := mustAlloc(t, d, 1*kib, device.Activation, "s")
	if d.Stats().Segments != 2 || s.Addr() != base+20<<20 {
		t.Errorf("small request: %d segments, addr %#x", d.Stats().Segments, s.Addr())
	}
	for _, x := range []*device.Block{a, c, s} {
		x.Release()
	}
}

// TestEmptyCache returns exactly the wholly free segments.
func TestEmptyCache(t *testing.T) {
	d := meta.New(0, device.Options{})
	s1a := mustAlloc(t, d, 1*mib, device.Activation, "s1a") // small segment 1
	s1b := mustAlloc(t, d, 1*mib, device.Activation, "s1b") // fills it
	s2 := mustAlloc(t, d, 1*kib, device.Activation, "s2")   // small segment 2
	l3 := mustAlloc(t, d, 5*mib, device.Activation, "l3")   // 20 MiB segment 3
	l4 := mustAlloc(t, d, 30*mib, device.Parameter, "l4")   // 30 MiB segment 4
	if st := d.Stats(); st.Segments != 4 || st.Reserved.Current != 54*mib {
		t.Fatalf("setup: %d segments, %d reserved", st.Segments, st.Reserved.Current)
	}
	s2.Release()  // segment 2 wholly free
	s1a.Release() // segment 1 partly used
	l3.Release()  // segment 3 wholly free
	d.StartTimeline()
	d.EmptyCache()
	tl := d.StopTimeline()
	st := d.Stats()
	if st.Segments != 2 || st.Reserved.Current != 32*mib || st.Reserved.Frees != 2 || st.Reserved.Freed != 22*mib {
		t.Errorf("after EmptyCache: %d segments, reserved %+v; want 2 segments, 32 MiB", st.Segments, st.Reserved)
	}
	if st.CacheFlushes != 0 {
		t.Errorf("EmptyCache counted as a cache flush under pressure")
	}
	if st.LargestFree != 1*mib {
		t.Errorf("LargestFree %d, want segment 1's free MiB", st.LargestFree)
	}
	var freed []int64
	for _, e := range tl.Events {
		if e.Kind != "segment_free" {
			t.Errorf("unexpected event %+v", e)
		}
		freed = append(freed, e.Bytes)
	}
	if len(freed) != 2 || freed[0]+freed[1] != 22*mib {
		t.Errorf("segment_free events %v, want 2 MiB and 20 MiB", freed)
	}
	if s1b.Addr() != base+1<<20 || l4.Addr() != base+24<<20 {
		t.Errorf("live blocks moved: %#x %#x", s1b.Addr(), l4.Addr())
	}
	// New segments get new addresses: the address space is never reused.
	n := mustAlloc(t, d, 2*mib, device.Activation, "n")
	if n.Addr() != base+54<<20 {
		t.Errorf("new segment at %#x, want %#x", n.Addr(), base+54<<20)
	}
	for _, x := range []*device.Block{s1b, l4, n} {
		x.Release()
	}
	d.EmptyCache()
	if st := d.Stats(); st.Segments != 0 || st.Reserved.Current != 0 || st.LargestFree != 0 {
		t.Errorf("after freeing everything: %+v", st)
	}
}
