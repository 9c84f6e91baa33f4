package device_test

import (
	"bytes"
	"fmt"
	"math/rand"
	"reflect"
	"strings"
	"testing"

	"github.com/headroom-ml/headroom/device"
	"github.com/headroom-ml/headroom/device/cpu"
	"github.com/headroom-ml/headroom/device/meta"
)

func wantPanic(t *testing.T, what, contains string, f func()) {
	t.Helper()
	defer func() {
		t.Helper()
		r := recover()
		if r == nil {
			t.Errorf("%s did not panic", what)
			return
		}
		if s := fmt.Sprint(r); !strings.Contains(s, contains) {
			t.Errorf("%s panicked with %q, want it to mention %q", what, s, contains)
		}
	}()
	f()
}

func TestRetainRelease(t *testing.T) {
	d := meta.New(0, device.Options{})
	b := mustAlloc(t, d, 1000, device.Activation, "x")
	if b.Refs() != 1 || b.Freed() {
		t.Fatalf("new block: Refs %d Freed %v", b.Refs(), b.Freed())
	}
	b.Retain()
	b.Retain()
	if b.Refs() != 3 {
		t.Errorf("Refs after two Retains = %d, want 3", b.Refs())
	}
	b.Release()
	b.Release()
	if b.Freed() || d.LiveBlocks() != 1 || d.CurrentBytes() != 1000 {
		t.Errorf("block freed before its last Release: Freed %v live %d bytes %d", b.Freed(), d.LiveBlocks(), d.CurrentBytes())
	}
	b.Release() // the last reference: freed at once
	if !b.Freed() || d.LiveBlocks() != 0 || d.CurrentBytes() != 0 {
		t.Errorf("after the last Release: Freed %v live %d bytes %d", b.Freed(), d.LiveBlocks(), d.CurrentBytes())
	}
	wantPanic(t, "Retain of a freed block", "Retain of freed block", b.Retain)
	// A failed Retain leaves the block freed.
	if !b.Freed() || b.Refs() != 0 {
		t.Errorf("Retain of a freed block revived it: Refs %d", b.Refs())
	}
	wantPanic(t, "double Release", "released more often than retained", b.Release)
	wantPanic(t, "Retain after a double Release", "Retain of freed block", b.Retain)
	wantPanic(t, "Addr of a freed block", "Addr of freed block", func() { b.Addr() })
	wantPanic(t, "Bytes of a freed block", "Bytes of freed block", func() { b.Bytes() })
	wantPanic(t, "BlockSize of a freed block", "BlockSize of freed block", func() { b.BlockSize() })
	wantPanic(t, "Ptr of a freed block", "Ptr of freed block", func() { b.Ptr() })
	wantPanic(t, "Retag of a freed block", "Retag of freed block", func() { b.Retag(device.Other) })
	st := d.Stats()
	if st.Requested.Frees != 1 || st.Requested.Current != 0 {
		t.Errorf("the panics changed the counters: %+v", st.Requested)
	}
}

func TestBlockAccessors(t *testing.T) {
	d := cpu.New(0, device.Options{})
	l := device.Label{Tag: device.Parameter, Op: "linear", Scope: "fc", Phase: "init"}
	b, err := d.Alloc(1000, l)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Release()
	if b.Device() != d || b.Label() != l || b.Ptr() != 0 {
		t.Errorf("Device %v Label %+v Ptr %d", b.Device(), b.Label(), b.Ptr())
	}
	if p := b.Bytes(); len(p) != 1000 || cap(p) != 1000 {
		t.Errorf("Bytes: len %d cap %d, want 1000 1000", len(p), cap(p))
	}
	if b.Version() != 0 {
		t.Errorf("new block Version = %d", b.Version())
	}
	b.Bump()
	b.Bump()
	if b.Version() != 2 {
		t.Errorf("Version after two Bumps = %d, want 2", b.Version())
	}
	b.Relabel("matmul", "fc2")
	if got := b.Label(); got.Op != "matmul" || got.Scope != "fc2" || got.Tag != device.Parameter || got.Phase != "init" {
		t.Errorf("after Relabel: %+v", got)
	}
	if g := d.Live(); len(g) != 1 || g[0].Creator != "fc2/matmul" {
		t.Errorf("Live after Relabel = %+v", g)
	}
}

func TestRetag(t *testing.T) {
	d := meta.New(0, device.Options{})
	b := mustAlloc(t, d, 1000, device.Activation, "x")
	d.StartTimeline()
	b.Retag(device.Gradient)
	b.Retag(device.Gradient) // no-op
	tl := d.StopTimeline()
	st := d.Stats()
	wantCounter(t, "activation", st.Tag(device.Activation), device.Counter{Peak: 1000, Allocated: 1000, Freed: 1000, Allocs: 1, Frees: 1})
	wantCounter(t, "gradient", st.Tag(device.Gradient), device.Counter{Current: 1000, Peak: 1000, Allocated: 1000, Allocs: 1})
	if st.Requested.Current != 1000 || st.Requested.Allocs != 1 || st.Requested.Frees != 0 {
		t.Errorf("Retag changed the totals: %+v", st.Requested)
	}
	if b.Label().Tag != device.Gradient {
		t.Errorf("Label().Tag = %s", b.Label().Tag)
	}
	if len(tl.Events) != 1 || tl.Events[0].Kind != "retag" || tl.Events[0].Tag != device.Gradient || tl.Events[0].Bytes != 1000 {
		t.Errorf("timeline of Retag = %+v", tl.Events)
	}
	b.Release()
	st = d.Stats()
	if st.Tag(device.Gradient).Current != 0 || st.Tag(device.Activation).Current != 0 {
		t.Errorf("Release after Retag freed under the wrong tag: %+v", st.ByTag)
	}
	c := mustAlloc(t, d, 1, device.Other, "y")
	wantPanic(t, "Retag to an invalid tag", "invalid tag", func() { c.Retag(device.NumTags) })
	c.Release()
}

// TestBytesNoOverlap writes a pattern into every live cpu block and checks
// them all after each allocation and free: two live blocks never share a
// byte, and a block's bytes survive whatever happens around it.
func TestBytesNoOverlap(t *testing.T) {
	d := cpu.New(0, device.Options{Capacity: 48 * mib})
	rng := rand.New(rand.NewSource(1))
	type entry struct {
		b    *device.Block
		seed byte
	}
	var live []entry
	// Block e holds pattern[e.seed:]: a different byte sequence per seed.
	pattern := make([]byte, 4<<20+256)
	for i := range pattern {
		pattern[i] = byte(i*7 + i/251)
	}
	fill := func(e entry) { copy(e.b.Bytes(), pattern[e.seed:]) }
	check := func(step int) {
		for _, e := range live {
			p := e.b.Bytes()
			if int64(len(p)) != e.b.Len() {
				t.Fatalf("step %d: block %d: len(Bytes) = %d, Len %d", step, e.b.ID(), len(p), e.b.Len())
			}
			if !bytes.Equal(p, pattern[int(e.seed):int(e.seed)+len(p)]) {
				t.Fatalf("step %d: block %d (%d bytes at %#x) overwritten", step, e.b.ID(), e.b.Len(), e.b.Addr())
			}
		}
		for i, x := range live {
			for _, y := range live[i+1:] {
				xa, ya := x.b.Addr(), y.b.Addr()
				if xa < ya+uint64(y.b.BlockSize()) && ya < xa+uint64(x.b.BlockSize()) {
					t.Fatalf("step %d: blocks %d [%#x+%d] and %d [%#x+%d] overlap", step,
						x.b.ID(), xa, x.b.BlockSize(), y.b.ID(), ya, y.b.BlockSize())
				}
			}
		}
	}
	for step := range 300 {
		if len(live) == 0 || rng.Intn(3) > 0 {
			n := int64(rng.Intn(64 << 10))
			if rng.Intn(8) == 0 {
				n = int64(rng.Intn(3<<20) + 1<<20)
			}
			b, err := d.Alloc(n, device.Label{Tag: device.Activation})
			if err != nil {
				continue // capacity pressure is part of the test
			}
			e := entry{b, byte(rng.Intn(256))}
			fill(e)
			live = append(live, e)
		} else {
			i := rng.Intn(len(live))
			live[i].b.Release()
			live = append(live[:i], live[i+1:]...)
		}
		if step%10 == 0 {
			check(step)
		}
	}
	check(-1)
	for _, e := range live {
		e.b.Release()
	}
}

func TestLiveAndLeaks(t *testing.T) {
	d := meta.New(0, device.Options{})
	var bs []*device.Block
	alloc := func(n int64, tag device.Tag, scope, op string) *device.Block {
		b, err := d.Alloc(n, device.Label{Tag: tag, Scope: scope, Op: op})
		if err != nil {
			t.Fatal(err)
		}
		bs = append(bs, b)
		return b
	}
	alloc(4000, device.Parameter, "fc1", "linear")
	alloc(1000, device.Parameter, "fc1", "linear")
	alloc(4000, device.Gradient, "fc1", "linear")
	alloc(6000, device.Optimizer, "", "adam")
	tmp := alloc(3000, device.Activation, "fc1", "relu")
	alloc(500, device.Workspace, "fc2", "matmul")
	alloc(500, device.Activation, "fc2", "matmul")
	want := []device.LiveGroup{
		{Tag: device.Optimizer, Creator: "adam", Bytes: 6000, Blocks: 1},
		{Tag: device.Parameter, Creator: "fc1/linear", Bytes: 5000, Blocks: 2},
		{Tag: device.Gradient, Creator: "fc1/linear", Bytes: 4000, Blocks: 1},
		{Tag: device.Activation, Creator: "fc1/relu", Bytes: 3000, Blocks: 1},
		{Tag: device.Activation, Creator: "fc2/matmul", Bytes: 500, Blocks: 1},
		{Tag: device.Workspace, Creator: "fc2/matmul", Bytes: 500, Blocks: 1},
	}
	if got := d.Live(); !reflect.DeepEqual(got, want) {
		t.Errorf("Live() =\n%+v\nwant\n%+v", got, want)
	}
	if d.LiveBlocks() != 7 {
		t.Errorf("LiveBlocks = %d, want 7", d.LiveBlocks())
	}
	keep := []device.Tag{device.Parameter, device.Gradient, device.Optimizer}
	if got := d.Leaks(keep...); !reflect.DeepEqual(got, want[3:]) {
		t.Errorf("Leaks(params, grads, optimizer) =\n%+v\nwant\n%+v", got, want[3:])
	}
	if got := d.Leaks(); !reflect.DeepEqual(got, want) {
		t.Errorf("Leaks() = %+v, want all of Live", got)
	}
	tmp.Release()
	bs[5].Release()
	bs[6].Release()
	if got := d.Leaks(keep...); len(got) != 0 {
		t.Errorf("Leaks after the step released its temporaries = %+v, want none", got)
	}
	if d.LiveBlocks() != 4 {
		t.Errorf("LiveBlocks = %d, want 4", d.LiveBlocks())
	}
	for _, b := range bs[:4] {
		b.Release()
	}
	if got := d.Live(); len(got) != 0 {
		t.Errorf("Live() on an empty device = %+v", got)
	}
}

func TestLabelCreator(t *testing.T) {
	tests := []struct {
		l    device.Label
		want string
	}{
		{device.Label{}, "?"},
		{device.Label{Op: "add"}, "add"},
		{device.Label{Scope: "enc.0"}, "enc.0"},
		{device.Label{Scope: "enc.0", Op: "add", Phase: "forward"}, "enc.0/add"},
	}
	for _, tt := range tests {
		if got := tt.l.Creator(); got != tt.want {
			t.Errorf("%+v.Creator() = %q, want %q", tt.l, got, tt.want)
		}
	}
}
