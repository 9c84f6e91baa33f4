package device_test

import (
	"bytes"
	"reflect"
	"strings"
	"testing"

	"github.com/headroom-ml/headroom/device"
	"github.com/headroom-ml/headroom/device/meta"
)

// busyTimeline records every kind of event: blocks allocated before the
// recording starts, allocations and frees in both pools, a retag, a failed
// allocation and segments returned by EmptyCache.
func busyTimeline(tb testing.TB) *device.Timeline {
	tb.Helper()
	d := meta.New(0, device.Options{Capacity: 64 * mib})
	early := d.MustAlloc(100, device.Label{Tag: device.Parameter, Op: "init"})
	d.StartTimeline()
	a := d.MustAlloc(1000, device.Label{Tag: device.Activation, Op: "relu", Scope: "fc1", Phase: "forward"})
	b := d.MustAlloc(5*mib, device.Label{Tag: device.Workspace, Op: "matmul", Phase: "backward"})
	b.Retag(device.Gradient)
	if _, err := d.Alloc(1<<30, device.Label{Tag: device.Activation, Op: "huge"}); err == nil {
		tb.Fatal("1 GiB fit in 64 MiB")
	}
	a.Release()
	b.Release()
	d.EmptyCache()
	tl := d.StopTimeline()
	early.Release()
	return tl
}

func timelineJSON(tb testing.TB, tl *device.Timeline) []byte {
	tb.Helper()
	var b bytes.Buffer
	if err := tl.WriteJSON(&b); err != nil {
		tb.Fatal(err)
	}
	return b.Bytes()
}

// ReadTimeline reads every recorded timeline and refuses events no device
// records, naming the event, the field and the value.
func TestReadTimelineRefuses(t *testing.T) {
	good := busyTimeline(t)
	if _, err := device.ReadTimeline(bytes.NewReader(timelineJSON(t, good))); err != nil {
		t.Fatalf("a recorded timeline: %v", err)
	}
	kinds := map[string]bool{}
	for _, e := range good.Events {
		kinds[e.Kind] = true
	}
	if len(kinds) != 6 {
		t.Fatalf("the timeline has the kinds %v, want all six", kinds)
	}
	for _, c := range []struct {
		edit func(tl *device.Timeline)
		want string
	}{
		{func(tl *device.Timeline) { tl.Capacity = -1 }, "capacity -1 is negative"},
		{func(tl *device.Timeline) { tl.Events[2].Kind = "malloc" }, `event 2 (malloc): unknown kind "malloc"`},
		{func(tl *device.Timeline) { tl.Events[1].Seq = 7 }, "event 1 (segment_alloc): seq 7, want 1"},
		{func(tl *device.Timeline) { tl.Events[3].T = -1 }, "t_ns -1 is before the previous event's"},
		{func(tl *device.Timeline) { tl.Events[0].Bytes = -1000 }, "event 0 (alloc): bytes -1000, allocated 1100"},
		{func(tl *device.Timeline) { tl.Events[0].Allocated = 999 }, "allocated 999 and reserved 2097152 are below what 1000 bytes of alloc need"},
		{func(tl *device.Timeline) { tl.Events[2].Allocated = 30 * mib }, "allocated 31457280 is above reserved"},
		{func(tl *device.Timeline) { tl.Events[2].Allocated++ }, "event 2 (alloc): allocated 5243981 and reserved 23068672 do not follow"},
		{func(tl *device.Timeline) { tl.Events[1].Reserved += 512 }, "event 1 (segment_alloc): allocated 1100 and reserved 23069184 do not follow"},
		{func(tl *device.Timeline) { tl.Events = append(tl.Events[:3], tl.Events[4:]...) }, "seq 4, want 3"},
	} {
		tl := busyTimeline(t)
		c.edit(tl)
		_, err := device.ReadTimeline(bytes.NewReader(timelineJSON(t, tl)))
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "meta:0") {
			t.Errorf("error %v, want one naming meta:0 and containing %q", err, c.want)
			continue
		}
		t.Logf("%v", err)
	}
}

// FuzzReadTimeline reads arbitrary JSON as a timeline: ReadTimeline never
// panics, and what it accepts has no negative number, never more allocated
// than reserved, a peak that is one of its events, and reads back the same
// after writing.
func FuzzReadTimeline(f *testing.F) {
	f.Add(timelineJSON(f, busyTimeline(f)))
	f.Add([]byte(`{"device":"cpu:0","capacity":0,"events":[]}`))
	f.Add([]byte(`{"events":[{"kind":"alloc","seq":0,"bytes":-5,"allocated":-5,"reserved":0,"tag":"other"}]}`))
	f.Add([]byte(`{"events":[{"kind":"free","seq":0,"bytes":8,"allocated":0,"reserved":8,"tag":"weights"}]}`))
	f.Add([]byte(`{"events":[{"kind":"segment_alloc","seq":0,"bytes":8,"reserved":8},{"kind":"alloc","seq":1,"bytes":8,"allocated":8,"reserved":8}]}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		tl, err := device.ReadTimeline(bytes.NewReader(b))
		if err != nil {
			return
		}
		for i, e := range tl.Events {
			if e.Bytes < 0 || e.Allocated < 0 || e.Reserved < 0 || e.T < 0 || e.Allocated > e.Reserved {
				t.Fatalf("accepted event %d: %+v", i, e)
			}
		}
		if n, at := tl.Peak(); at >= len(tl.Events) || (at >= 0 && tl.Events[at].Allocated != n) || n < 0 {
			t.Fatalf("Peak() = %d at %d of %d events", n, at, len(tl.Events))
		}
		again, err := device.ReadTimeline(bytes.NewReader(timelineJSON(t, tl)))
		if err != nil || !reflect.DeepEqual(again, tl) {
			t.Fatalf("the accepted timeline does not read back the same: %v", err)
		}
	})
}
