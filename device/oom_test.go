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

// TestOOM fills an 8 MiB device near capacity, where segments are cut to
// the exact request, and checks every field of the error that follows.
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
	// A 20 MiB segment would not fit: both are cut to the exact request.
	if before.Reserved.Current != 7*mib || before.Segments != 2 || before.CachedFree() != 0 {
		t.Fatalf("near capacity: reserved %d in %d segments, cached free %d; want 7 MiB in 2, 0",
			before.Reserved.Current, before.Segments, before.CachedFree())
	}

	_, err = d.Alloc(2*mib, device.Label{Tag: device.Workspace, Op: "matmul", Scope: "fc2", Phase: "forward"})
	oom := wantOOM(t, err)
	want := &device.OOMError{
		Device: "meta:0", Requested: 2 * mib,
		Label:    device.Label{Tag: device.Workspace, Op: "matmul", Scope: "fc2", Phase: "forward"},
		Capacity: 8 * mib, Allocated: 7 * mib, Reserved: 7 * mib, ReservedUnused: 0, LargestFree: 0,
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
	if !hasHint(oom, "activations are 57%") || !hasHint(oom, "parameters and gradients are 43%") {
		t.Errorf("hints %q lack activations (57%%) and parameters (43%%)", oom.Hints)
	}
	if hasHint(oom, "fragmentation") || hasHint(oom, "workspace") || hasHint(oom, "larger than the whole capacity") {
		t.Errorf("hints %q include advice the numbers do not support", oom.Hints)
	}
	msg := err.Error()
	for _, s := range []string{
		"meta:0: out of memory", "tried to allocate 2.00 MiB for workspace (fc2/matmul)",
		"capacity 8.00 MiB", "7.00 MiB allocated", "7.00 MiB reserved", "0 B reserved but unused",
		"largest live tag: activation 4.00 MiB (57% of allocated)",
		"from fc1/relu", "hint: activations",
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
	s, err := d.Alloc(1*mib, device.Label{Tag: device.Workspace})
	if err != nil {
		t.Fatalf("smaller allocation after OOM: %v", err)
	}
	if st := d.Stats(); st.Reserved.Current != 8*mib || st.Segments != 3 {
		t.Errorf("1 MiB at 7 MiB of 8: reserved %d in %d segments, want an exact 1 MiB segment", st.Reserved.Current, st.Segments)
	}
	// Exact segments still start at 2 MiB-aligned addresses.
	if p.Addr() != base || a.Addr() != base+4<<20 || s.Addr() != base+8<<20 {
		t.Errorf("addresses %#x %#x %#x, want %#x %#x %#x", p.Addr(), a.Addr(), s.Addr(), base, base+4<<20, base+8<<20)
	}
	// Full: even the smallest request fails now.
	_, err = d.Alloc(0, device.Label{Tag: device.Other})
	wantOOM(t, err)
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

	// 8 MiB exceeds the capacity: no flush could help.
	_, err := d.Alloc(8*mib, device.Label{Tag: device.Activation})
	oom := wantOOM(t, err)
	if !hasHint(oom, "larger than the whole capacity") {
		t.Errorf("hints %q lack the single-request hint", oom.Hints)
	}
	// 4 MiB: 5-2+4 > 6 even with the cache returned.
	_, err = d.Alloc(4*mib, device.Label{Tag: device.Activation})
	oom = wantOOM(t, err)
	if oom.Reserved != 5*mib || oom.ReservedUnused != 2*mib || oom.LargestFree != 2*mib {
		t.Errorf("OOM numbers: reserved %d unused %d largest free %d", oom.Reserved, oom.ReservedUnused, oom.LargestFree)
	}
	if st := d.Stats(); st.Reserved.Current != 5*mib || st.Segments != 2 || st.CacheFlushes != 0 || st.OOMs != 2 {
		t.Errorf("hopeless requests changed the cache: reserved %d, %d segments, %d flushes, %d OOMs",
			st.Reserved.Current, st.Segments, st.CacheFlushes, st.OOMs)
	}

	// 3 MiB fits once the cached 2 MiB segment is returned.
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

// TestOOMFragmentation: 2 MiB reserved but unused in 512 KiB holes cannot
// serve 1 MiB; the hints say so, and say that activations dominate.
func TestOOMFragmentation(t *testing.T) {
	d := meta.New(0, device.Options{Capacity: 4 * mib})
	var bs []*device.Block
	for i := range 8 {
		bs = append(bs, mustAlloc(t, d, 512*kib, device.Activation, fmt.Sprint("act", i%2)))
	}
	if st := d.Stats(); st.Segments != 2 || st.Reserved.Current != 4*mib {
		t.Fatalf("setup: %d segments, %d reserved", st.Segments, st.Reserved.Current)
	}
	// One 512 KiB hole in each segment: 1 MiB unused, exactly the request.
	bs[0].Release()
	bs[6].Release()
	_, err := d.Alloc(1*mib, device.Label{Tag: device.Activation, Op: "attn"})
	oom := wantOOM(t, err)
	if oom.ReservedUnused != 1*mib || oom.LargestFree != 512*kib || oom.Allocated != 3*mib {
		t.Errorf("unused %d largest %d allocated %d, want 1 MiB, 512 KiB, 3 MiB", oom.ReservedUnused, oom.LargestFree, oom.Allocated)
	}
	if !hasHint(oom, "fragmentation: 1.00 MiB") || !hasHint(oom, "activations are 100%") {
		t.Errorf("hints %q lack fragmentation and activations", oom.Hints)
	}
	wantTop := []device.LiveGroup{
		{Tag: device.Activation, Creator: "act1", Bytes: 2 * mib, Blocks: 4},
		{Tag: device.Activation, Creator: "act0", Bytes: 1 * mib, Blocks: 2},
	}
	if !reflect.DeepEqual(oom.Top, wantTop) {
		t.Errorf("Top = %+v, want %+v", oom.Top, wantTop)
	}
	// Less unused than the request is not fragmentation.
	bs[1].Release() // merges with hole 0: 1.5 MiB unused, largest 1 MiB
	_, err = d.Alloc(2*mib, device.Label{Tag: device.Activation})
	oom = wantOOM(t, err)
	if hasHint(oom, "fragmentation") {
		t.Errorf("fragmentation hint with %d unused for %d: %q", oom.ReservedUnused, oom.Requested, oom.Hints)
	}
	// A request that fits a hole still succeeds.
	h := mustAlloc(t, d, 1*mib, device.Activation, "hole")
	h.Release()
	for _, i := range []int{2, 3, 4, 5, 7} {
		bs[i].Release()
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
	if oom.Allocated != 0 || len(oom.Top) != 0 || !hasHint(oom, "larger than the whole capacity") {
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
