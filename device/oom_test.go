package device_test

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/headroom-ml/headroom/device"
	"github.com/headroom-ml/headroom/device/meta"
)

func wantOOM(t *testing.T, err error) *device.OOMError {
	t.Helper()
	var oom *device.OOMError
	if !errors.As(err, &oom) {
		t.Fatalf("err = %v, want *device.OOMError", err)
	}
	return oom
}

func hasHint(oom *device.OOMError, word string) bool {
	for _, h := range oom.Hints {
		if strings.Contains(h, word) {
			return true
		}
	}
	return false
}

// TestOOM fills an 8 MiB device near capacity, where a new segment is
// committed only as far as its blocks go, and checks every field of the
// error that follows.
func TestOOM(t *testing.T) {
	d := meta.New(0, device.Options{Capacity: 8 * mib})
	p, err := d.Alloc(3*mib, device.Label{Tag: device.Parameter, Op: "linear", Scope: "fc1"})
	if err != nil {
		t.Fatal(err)
	}
	a, err := d.Alloc(4*mib, device.Label{Tag: device.Activation, Op: "relu", Scope: "fc1"})
	if err != nil {
		t.Fatal(err)
	}
	before := d.Stats()
	// A committed 20 MiB segment would not fit: one 20 MiB segment holds
	// both blocks (at offsets 0 and 3 MiB), and only they are committed.
	if before.Reserved.Current != 7*mib || before.Segments != 1 || before.CachedFree() != 0 || a.Addr() != p.Addr()+3<<20 {
		t.Fatalf("near capacity: reserved %d in %d segments, cached free %d, a at +%d; want 7 MiB in 1, 0, +3 MiB",
			before.Reserved.Current, before.Segments, before.CachedFree(), a.Addr()-p.Addr())
	}

	_, err = d.Alloc(2*mib, device.Label{Tag: device.Workspace, Op: "matmul", Scope: "fc2", Phase: "forward"})
	oom := wantOOM(t, err)
	// The block would be cut from the uncommitted rest of the segment,
	// [7, 20) MiB; 7 MiB live + 2 MiB > 8 MiB by 1 MiB.
	want := &device.OOMError{
		Device: "meta:0", Requested: 2 * mib,
		Label:    device.Label{Tag: device.Workspace, Op: "matmul", Scope: "fc2", Phase: "forward"},
		Capacity: 8 * mib, Allocated: 7 * mib, Reserved: 7 * mib, ReservedUnused: 0, LargestFree: 0,
		Pool: "large", Block: 2 * mib, FreeChunk: 13 * mib, Occupied: 7 * mib, Reason: device.ReasonFull, Short: 1 * mib,
		ByTag: [device.NumTags]int64{device.Parameter: 3 * mib, device.Activation: 4 * mib},
		Top: []device.LiveGroup{
			{Tag: device.Activation, Creator: "fc1/relu", Bytes: 4 * mib, Blocks: 1},
			{Tag: device.Parameter, Creator: "fc1/linear", Bytes: 3 * mib, Blocks: 1},
		},
		Unsaved: []device.LiveGroup{{Tag: device.Activation, Creator: "fc1/relu", Bytes: 4 * mib, Blocks: 1}}, // nothing saved it
	}
	got := *oom
	got.Hints = nil
	if !reflect.DeepEqual(&got, want) {
		t.Errorf("OOMError = %+v\nwant %+v", got, *want)
	}
	if oom.LargestTag() != device.Activation {
		t.Errorf("LargestTag = %s, want activation", oom.LargestTag())
	}
	if !hasHint(oom, "EmptyCache would not help") || !hasHint(oom, "shrink by at least 1.00 MiB") ||
		!hasHint(oom, "activations are 57%") || !hasHint(oom, "parameters and gradients are 43%") {
		t.Errorf("hints %q lack the shortfall (1 MiB), activations (57%%) and parameters (43%%)", oom.Hints)
	}
	if hasHint(oom, "workspace") || hasHint(oom, "larger than the whole capacity") {
		t.Errorf("hints %q include advice the numbers do not support", oom.Hints)
	}
	msg := err.Error()
	for _, s := range []string{
		"meta:0: out of memory", "tried to allocate 2.00 MiB for workspace (fc2/matmul)",
		"capacity 8.00 MiB", "7.00 MiB allocated", "7.00 MiB reserved", "0 B reserved but unused",
		"largest live tag: activation 4.00 MiB (57% of allocated)",
		"from fc1/relu", "hint: activations",
		"why: it needs a 2.00 MiB block from the large pool (blocks over 1 MiB", "in a free 13.00 MiB chunk not backed by memory",
		"why: the live blocks occupy 7.00 MiB of the 8.00 MiB capacity, 1.00 MiB too much for this block",
	} {
		if !strings.Contains(msg, s) {
			t.Errorf("Error() lacks %q:\n%s", s, msg)
		}
	}
	if strings.Contains(msg, "backend:") {
		t.Errorf("Error() mentions a backend error that did not happen:\n%s", msg)
	}
	if oom.Unwrap() != nil {
		t.Errorf("Unwrap = %v, want nil", oom.Unwrap())
	}

	// The device is unchanged apart from OOMs, and usable.
	after := d.Stats()
	before.OOMs++
	if !reflect.DeepEqual(after, before) {
		t.Errorf("stats changed by the OOM:\n got %+v\nwant %+v", after, before)
	}
	if d.LiveBlocks() != 2 {
		t.Errorf("LiveBlocks = %d after OOM, want 2", d.LiveBlocks())
	}
	// 1 MiB comes from a new 2 MiB small segment (after the 20 MiB one),
	// of which only the block is committed.
	s, err := d.Alloc(1*mib, device.Label{Tag: device.Workspace})
	if err != nil {
		t.Fatalf("smaller allocation after OOM: %v", err)
	}
	if st := d.Stats(); st.Reserved.Current != 8*mib || st.Segments != 2 || s.Addr() != base+20<<20 {
		t.Errorf("1 MiB at 7 MiB of 8: reserved %d in %d segments at %#x, want 8 MiB in 2 at %#x", st.Reserved.Current, st.Segments, s.Addr(), base+20<<20)
	}
	// Full: even the smallest request fails now, for 512 B.
	_, err = d.Alloc(0, device.Label{Tag: device.Other})
	oom = wantOOM(t, err)
	if oom.Pool != "small" || oom.Block != 512 || oom.FreeChunk != 1*mib || oom.Short != 512 || oom.Reason != device.ReasonFull {
		t.Errorf("Alloc(0) on a full device: pool %s block %d free chunk %d short %d reason %s; want small 512 1 MiB 512 full",
			oom.Pool, oom.Block, oom.FreeChunk, oom.Short, oom.Reason)
	}
	for _, b := range []*device.Block{p, a, s} {
		b.Release()
	}
	st := d.Stats()
	if st.OOMs != 2 || st.Requested.Current != 0 || st.Allocated.Current != 0 || d.LiveBlocks() != 0 {
		t.Errorf("after releasing all: %+v", st)
	}
}

// TestOOMCacheFlush: an allocation that fits only after the cached
// segments are returned succeeds and counts one cache flush; one that would
// not fit even then leaves the cache alone.
func TestOOMCacheFlush(t *testing.T) {
	d := meta.New(0, device.Options{Capacity: 6 * mib})
	c := mustAlloc(t, d, 1*kib, device.Other, "cached")
	c.Release()                                        // a wholly free 2 MiB segment stays cached
	l := mustAlloc(t, d, 3*mib, device.Parameter, "w") // 2+20 > 6, 2+3 <= 6: exact 3 MiB segment
	if st := d.Stats(); st.Reserved.Current != 5*mib || st.Segments != 2 || st.CacheFlushes != 0 {
		t.Fatalf("setup: reserved %d, %d segments, %d flushes", st.Reserved.Current, st.Segments, st.CacheFlushes)
	}

	// 8 MiB exceeds the capacity: no flush could help. It would be cut
	// from the uncommitted 17 MiB rest of w's 20 MiB segment.
	_, err := d.Alloc(8*mib, device.Label{Tag: device.Activation})
	oom := wantOOM(t, err)
	if !hasHint(oom, "larger than the whole capacity") || hasHint(oom, "EmptyCache") {
		t.Errorf("hints %q: want the single-request hint only", oom.Hints)
	}
	if oom.Reason != device.ReasonTooLarge || oom.Pool != "large" || oom.Block != 8*mib || oom.FreeChunk != 17*mib ||
		oom.Occupied != 3*mib || oom.Short != 3*mib+8*mib-6*mib {
		t.Errorf("8 MiB OOM: reason %s pool %s block %d free chunk %d occupied %d short %d", oom.Reason, oom.Pool, oom.Block, oom.FreeChunk, oom.Occupied, oom.Short)
	}
	// 4 MiB: 3 live + 4 > 6 even with the cached 2 MiB given back.
	_, err = d.Alloc(4*mib, device.Label{Tag: device.Activation})
	oom = wantOOM(t, err)
	if oom.Reserved != 5*mib || oom.ReservedUnused != 2*mib || oom.LargestFree != 2*mib ||
		oom.Reason != device.ReasonFull || oom.Occupied != 3*mib || oom.Short != 1*mib {
		t.Errorf("OOM numbers: reserved %d unused %d largest free %d reason %s occupied %d short %d",
			oom.Reserved, oom.ReservedUnused, oom.LargestFree, oom.Reason, oom.Occupied, oom.Short)
	}
	if !strings.Contains(err.Error(), "the 2.00 MiB of cached free memory cannot help") {
		t.Errorf("Error() does not say the cache cannot help:\n%s", err)
	}
	if st := d.Stats(); st.Reserved.Current != 5*mib || st.Segments != 2 || st.CacheFlushes != 0 || st.OOMs != 2 {
		t.Errorf("hopeless requests changed the cache: reserved %d, %d segments, %d flushes, %d OOMs",
			st.Reserved.Current, st.Segments, st.CacheFlushes, st.OOMs)
	}

	// 3 MiB fits once the cached 2 MiB segment's memory is given back (the
	// segment stays, uncommitted).
	b, err := d.Alloc(3*mib, device.Label{Tag: device.Activation})
	if err != nil {
		t.Fatalf("allocation that fits after a cache flush: %v", err)
	}
	st := d.Stats()
	if st.CacheFlushes != 1 || st.Reserved.Current != 6*mib || st.Segments != 2 || st.Reserved.Frees != 1 {
		t.Errorf("after flush: %d flushes, reserved %d in %d segments, %d segment frees; want 1, 6 MiB in 2, 1",
			st.CacheFlushes, st.Reserved.Current, st.Segments, st.Reserved.Frees)
	}
	b.Release()
	l.Release()
}

// TestFragmentationGivesBack: 1 MiB of cached free memory in two 512 KiB
// holes of a full 4 MiB device serves a 1 MiB request: the holes give their
// memory back and a new small segment commits the block. Freeing a block
// next to a hole gives its memory back too.
func TestFragmentationGivesBack(t *testing.T) {
	d := meta.New(0, device.Options{Capacity: 4 * mib})
	var bs []*device.Block
	for i := range 8 {
		bs = append(bs, mustAlloc(t, d, 512*kib, device.Activation, fmt.Sprint("act", i%2)))
	}
	if st := d.Stats(); st.Segments != 2 || st.Reserved.Current != 4*mib {
		t.Fatalf("setup: %d segments, %d reserved", st.Segments, st.Reserved.Current)
	}
	bs[0].Release()
	bs[6].Release()
	if st := d.Stats(); st.CachedFree() != 1*mib || st.LargestFree != 512*kib {
		t.Fatalf("holes: cached free %d, largest %d", st.CachedFree(), st.LargestFree)
	}
	h := mustAlloc(t, d, 1*mib, device.Activation, "attn")
	st := d.Stats()
	if st.Reserved.Current != 4*mib || st.Segments != 3 || st.CacheFlushes != 1 || st.CachedFree() != 0 || h.Addr() != base+4<<20 {
		t.Errorf("1 MiB into the holes' memory: reserved %d in %d segments, %d flushes, cached free %d, at %#x; want 4 MiB in 3, 1, 0, %#x",
			st.Reserved.Current, st.Segments, st.CacheFlushes, st.CachedFree(), h.Addr(), base+4<<20)
	}
	// Now 4 MiB is live: 512 B more is 512 B too much, whatever is free.
	_, err := d.Alloc(512*kib, device.Label{Tag: device.Activation, Op: "more"})
	oom := wantOOM(t, err)
	if oom.Reason != device.ReasonFull || oom.Pool != "small" || oom.Block != 512*kib || oom.FreeChunk != 512*kib ||
		oom.Occupied != 4*mib || oom.Short != 512*kib || !hasHint(oom, "activations are 100%") {
		t.Errorf("on a full device: %+v", oom)
	}
	// bs[1] borders the uncommitted hole of bs[0]: its memory goes back.
	frees := d.Stats().Reserved.Frees
	bs[1].Release()
	if st := d.Stats(); st.Reserved.Current != 3*mib+512*kib || st.Reserved.Frees != frees+1 || st.CacheFlushes != 1 || st.LargestFree != 0 {
		t.Errorf("freeing next to a hole: reserved %d, %d frees (was %d), %d flushes, largest free %d; want 3.5 MiB, one more, 1, 0",
			st.Reserved.Current, st.Reserved.Frees, frees, st.CacheFlushes, st.LargestFree)
	}
	h.Release()
	for _, i := range []int{2, 3, 4, 5, 7} {
		bs[i].Release()
	}
}

// TestSmallRequestBesideLargeCache is the puzzling OOM: a small
// request on a device whose cached free memory lies in a large segment.
// The small pool cannot use a large segment's free chunk, so the chunk's
// memory is given back and a new small segment commits the block.
func TestSmallRequestBesideLargeCache(t *testing.T) {
	d := meta.New(0, device.Options{Capacity: 22 * mib})
	l := mustAlloc(t, d, 5*mib, device.Activation, "l")     // a 20 MiB segment, committed: 15 MiB cached
	s1 := mustAlloc(t, d, 1*mib, device.Activation, "s1")   // a 2 MiB small segment, committed: 22 MiB reserved
	s2 := mustAlloc(t, d, 1*mib, device.Activation, "s2")   // fills it
	s3 := mustAlloc(t, d, 392*kib, device.Activation, "s3") // needs a new small segment
	// The large segment's 15 MiB goes back, which leaves room to commit
	// the whole new 2 MiB segment: 5 + 2 + 2 MiB.
	st := d.Stats()
	if st.Reserved.Current != 9*mib || st.Segments != 3 || st.CacheFlushes != 1 || st.OOMs != 0 || st.LargestFree != 2*mib-392*kib {
		t.Errorf("after the small request: reserved %d in %d segments, %d flushes, %d OOMs, largest free %d; want 9 MiB in 3, 1, 0, 2 MiB - 392 KiB",
			st.Reserved.Current, st.Segments, st.CacheFlushes, st.OOMs, st.LargestFree)
	}
	for _, b := range []*device.Block{l, s1, s2, s3} {
		b.Release()
	}
}

// TestOOMRemainder: a large block keeps a remainder of 1 MiB or less. A
// request of 11 MiB + 1 rounds to 11 MiB + 512 and starts a 12 MiB segment
// of its own, whose 1 MiB − 512 rest is too small to split off: the block
// is 12 MiB, and it is the block that must fit.
func TestOOMRemainder(t *testing.T) {
	const n = 11*mib + 1
	d := meta.New(0, device.Options{Capacity: 11*mib + 512*kib})
	_, err := d.Alloc(n, device.Label{Tag: device.Activation})
	oom := wantOOM(t, err)
	if oom.Reason != device.ReasonTooLarge || oom.Block != 12*mib || oom.NewSegment != 12*mib || oom.Short != 512*kib {
		t.Errorf("11 MiB + 1 on 11.5 MiB: reason %s block %d new segment %d short %d", oom.Reason, oom.Block, oom.NewSegment, oom.Short)
	}
	if !strings.Contains(err.Error(), "12.00 MiB block (the whole free space: a remainder of 1023.50 KiB is too small to split off)") ||
		!hasHint(oom, "this single request's block (12.00 MiB, for 11.00 MiB) is larger than the whole capacity (11.50 MiB)") {
		t.Errorf("Error() does not explain the remainder:\n%s", err)
	}
	// With 1.5 MiB live (two 768 KiB blocks in a committed 2 MiB small
	// segment) on 13 MiB, the rounded request would fit
	// (1.5 + 11 MiB + 512 <= 13 MiB) but the block does not: 0.5 MiB short.
	d.SetCapacity(13 * mib)
	w1 := mustAlloc(t, d, 768*kib, device.Parameter, "w")
	w2 := mustAlloc(t, d, 768*kib, device.Parameter, "w")
	_, err = d.Alloc(n, device.Label{Tag: device.Activation})
	oom = wantOOM(t, err)
	if oom.Reason != device.ReasonFull || oom.Occupied != 1536*kib || oom.Block != 12*mib || oom.Short != 512*kib || oom.ReservedUnused != 512*kib {
		t.Errorf("beside 1.5 MiB on 13 MiB: reason %s occupied %d block %d short %d unused %d", oom.Reason, oom.Occupied, oom.Block, oom.Short, oom.ReservedUnused)
	}
	// On 13.5 MiB the small segment's free 512 KiB goes back and the 12 MiB
	// segment is committed whole.
	d.SetCapacity(13*mib + 512*kib)
	b := mustAlloc(t, d, n, device.Activation, "fits")
	if st := d.Stats(); b.BlockSize() != 12*mib || st.Reserved.Current != 13*mib+512*kib || st.CacheFlushes != 1 {
		t.Errorf("block %d, reserved %d, %d flushes; want 12 MiB, 13.5 MiB, 1", b.BlockSize(), st.Reserved.Current, st.CacheFlushes)
	}
	for _, x := range []*device.Block{b, w1, w2} {
		x.Release()
	}
}

// TestOOMExactBytes: an OOM reports the exact live bytes (Allocated, ByTag,
// Top) and the rounded ones only through Reserved and ReservedUnused.
func TestOOMExactBytes(t *testing.T) {
	d := meta.New(0, device.Options{Capacity: 4 * kib})
	a := mustAlloc(t, d, 1000, device.Activation, "a") // exact segment of 1024
	b := mustAlloc(t, d, 1, device.Gradient, "b")      // exact segment of 512
	_, err := d.Alloc(4*kib, device.Label{Tag: device.Other})
	oom := wantOOM(t, err)
	if oom.Allocated != 1001 || oom.Reserved != 1536 || oom.ReservedUnused != 0 ||
		oom.ByTag[device.Activation] != 1000 || oom.ByTag[device.Gradient] != 1 || oom.Top[0].Bytes != 1000 {
		t.Errorf("OOM = %+v", oom)
	}
	if !strings.Contains(err.Error(), "1001 B allocated, 1.50 KiB reserved") {
		t.Errorf("Error() = %s", err)
	}
	a.Release()
	b.Release()
}

func TestOOMTopGrouping(t *testing.T) {
	d := meta.New(0, device.Options{Capacity: 2 * mib})
	var bs []*device.Block
	add := func(n int64, tag device.Tag, scope, op string) {
		b, err := d.Alloc(n, device.Label{Tag: tag, Scope: scope, Op: op})
		if err != nil {
			t.Fatal(err)
		}
		bs = append(bs, b)
	}
	add(100*kib, device.Optimizer, "", "adam")
	add(100*kib, device.Optimizer, "", "adam")
	add(300*kib, device.Parameter, "enc", "")
	add(50*kib, device.Activation, "enc", "gelu")
	add(200*kib, device.Gradient, "", "")
	add(50*kib, device.Workspace, "enc", "gelu")
	_, err := d.Alloc(4*mib, device.Label{Tag: device.Activation})
	oom := wantOOM(t, err)
	want := []device.LiveGroup{
		{Tag: device.Parameter, Creator: "enc", Bytes: 300 * kib, Blocks: 1},
		{Tag: device.Gradient, Creator: "?", Bytes: 200 * kib, Blocks: 1},
		{Tag: device.Optimizer, Creator: "adam", Bytes: 200 * kib, Blocks: 2},
		{Tag: device.Activation, Creator: "enc/gelu", Bytes: 50 * kib, Blocks: 1},
		{Tag: device.Workspace, Creator: "enc/gelu", Bytes: 50 * kib, Blocks: 1},
	}
	if !reflect.DeepEqual(oom.Top, want) {
		t.Errorf("Top =\n%+v\nwant\n%+v", oom.Top, want)
	}
	if !hasHint(oom, "optimizer state is 25%") || !hasHint(oom, "parameters and gradients are 62%") {
		t.Errorf("hints %q", oom.Hints)
	}
	for _, b := range bs {
		b.Release()
	}
}

func TestOOMNothingLive(t *testing.T) {
	d := meta.New(0, device.Options{Capacity: 1 * mib})
	_, err := d.Alloc(1*mib+1, device.Label{Tag: device.Activation})
	oom := wantOOM(t, err)
	if oom.Allocated != 0 || len(oom.Top) != 0 || !hasHint(oom, "larger than the whole capacity") ||
		oom.Reason != device.ReasonTooLarge || oom.Pool != "large" || oom.Block != 1*mib+512 || oom.NewSegment != 20*mib || oom.Short != 512 {
		t.Errorf("OOM on an empty device: %+v", oom)
	}
	if strings.Contains(err.Error(), "largest live tag") {
		t.Errorf("Error() names a largest live tag on an empty device:\n%s", err)
	}
	// Exactly the capacity fits, in an exact segment.
	b := mustAlloc(t, d, 1*mib, device.Activation, "x")
	if st := d.Stats(); st.Reserved.Current != 1*mib {
		t.Errorf("reserved %d, want exactly 1 MiB", st.Reserved.Current)
	}
	b.Release()
}

func TestMustAllocPanicsWithOOM(t *testing.T) {
	d := meta.New(0, device.Options{Capacity: 1 * mib})
	defer func() {
		r := recover()
		oom, ok := r.(*device.OOMError)
		if !ok {
			t.Fatalf("MustAlloc panicked with %T %v, want *device.OOMError", r, r)
		}
		if oom.Requested != 2*mib {
			t.Errorf("Requested = %d", oom.Requested)
		}
	}()
	b := d.MustAlloc(1000, device.Label{})
	if b.Len() != 1000 {
		t.Errorf("MustAlloc(1000).Len() = %d", b.Len())
	}
	d.MustAlloc(2*mib, device.Label{Tag: device.Activation})
	t.Fatal("MustAlloc beyond capacity did not panic")
}

func TestMustAllocPanicsWithError(t *testing.T) {
	d := meta.New(0, device.Options{})
	defer func() {
		if _, ok := recover().(error); !ok {
			t.Fatal("MustAlloc(-1) did not panic with an error")
		}
	}()
	d.MustAlloc(-1, device.Label{})
}

func TestSetCapacity(t *testing.T) {
	d := meta.New(0, device.Options{})
	b := mustAlloc(t, d, 5*mib, device.Activation, "x") // 20 MiB segment
	d.SetCapacity(8 * mib)                              // below what is reserved
	if d.Capacity() != 8*mib || d.Stats().Capacity != 8*mib {
		t.Errorf("Capacity = %d", d.Capacity())
	}
	// The free 15 MiB of the segment still serves requests.
	c := mustAlloc(t, d, 10*mib, device.Activation, "y")
	_, err := d.Alloc(1*kib, device.Label{})
	wantOOM(t, err)
	b.Release()
	c.Release()
	// Once freed, the cache is returned to make room under the new limit.
	s := mustAlloc(t, d, 1*kib, device.Other, "z")
	if st := d.Stats(); st.Reserved.Current != 2*mib || st.CacheFlushes != 1 {
		t.Errorf("reserved %d, flushes %d; want 2 MiB, 1", st.Reserved.Current, st.CacheFlushes)
	}
	s.Release()
	d.SetCapacity(0)
	if d.Capacity() != 0 {
		t.Errorf("SetCapacity(0): Capacity = %d", d.Capacity())
	}
	for _, f := range []func(){
		func() { d.SetCapacity(-1) },
		func() { meta.New(0, device.Options{Capacity: -1}) },
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Error("negative capacity accepted")
				}
			}()
			f()
		}()
	}
}
