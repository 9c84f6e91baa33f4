package device_test

import (
	"bytes"
	"reflect"
	"strings"
	"testing"

	"github.com/headroom-ml/headroom/device"
	"github.com/headroom-ml/headroom/device/meta"
)

func TestTimeline(t *testing.T) {
	d := meta.New(0, device.Options{})
	if d.StopTimeline() != nil {
		t.Error("StopTimeline without StartTimeline returned a timeline")
	}
	early := mustAlloc(t, d, 100, device.Other, "early") // before recording
	d.StartTimeline()
	a, err := d.Alloc(1000, device.Label{Tag: device.Activation, Op: "relu", Scope: "fc1", Phase: "forward"})
	if err != nil {
		t.Fatal(err)
	}
	b, err := d.Alloc(5*mib, device.Label{Tag: device.Workspace, Op: "matmul", Scope: "fc2", Phase: "backward"})
	if err != nil {
		t.Fatal(err)
	}
	a.Release()
	b.Release()
	early.Release()
	d.EmptyCache()
	d.SetCapacity(1 * mib)
	if _, err := d.Alloc(2*mib, device.Label{Tag: device.Parameter, Op: "big"}); err == nil {
		t.Fatal("Alloc beyond capacity succeeded")
	}
	tl := d.StopTimeline()
	if d.StopTimeline() != nil {
		t.Error("second StopTimeline returned a timeline")
	}
	mustAlloc(t, d, 10, device.Other, "after").Release() // not recorded

	type ev struct {
		Kind                string
		Bytes               int64
		Addr                uint64
		Tag                 device.Tag
		Op, Scope, Phase    string
		Allocated, Reserved int64
	}
	const small1, large = base, base + 2<<20
	want := []ev{
		{"alloc", 1000, small1 + 512, device.Activation, "relu", "fc1", "forward", 1100, 2 * mib},
		{"segment_alloc", 20 * mib, large, 0, "", "", "", 1100, 22 * mib},
		{"alloc", 5 * mib, large, device.Workspace, "matmul", "fc2", "backward", 1100 + 5*mib, 22 * mib},
		{"free", 1000, small1 + 512, device.Activation, "relu", "fc1", "forward", 100 + 5*mib, 22 * mib},
		{"free", 5 * mib, large, device.Workspace, "matmul", "fc2", "backward", 100, 22 * mib},
		{"free", 100, small1, device.Other, "early", "", "", 0, 22 * mib},
		{"segment_free", 2 * mib, small1, 0, "", "", "", 0, 20 * mib},
		{"segment_free", 20 * mib, large, 0, "", "", "", 0, 0},
		{"oom", 2 * mib, 0, device.Parameter, "big", "", "", 0, 0},
	}
	var got []ev
	for i, e := range tl.Events {
		got = append(got, ev{e.Kind, e.Bytes, e.Addr, e.Tag, e.Op, e.Scope, e.Phase, e.Allocated, e.Reserved})
		if e.Seq != i {
			t.Errorf("event %d has Seq %d", i, e.Seq)
		}
		if i > 0 && e.T < tl.Events[i-1].T {
			t.Errorf("event %d is earlier than event %d", i, i-1)
		}
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("events:\n%+v\nwant\n%+v", got, want)
	}
	if tl.Device != "meta:0" || tl.Capacity != 0 {
		t.Errorf("timeline Device %q Capacity %d", tl.Device, tl.Capacity)
	}
	if n, at := tl.Peak(); n != 1100+5*mib || at != 2 {
		t.Errorf("Peak() = %d at %d, want %d at 2", n, at, 1100+5*mib)
	}

	var buf bytes.Buffer
	if err := tl.WriteJSON(&buf); err != nil {
		t.Fatal(err)
	}
	js := buf.String()
	for _, s := range []string{`"kind": "segment_alloc"`, `"tag": "workspace"`, `"phase": "backward"`, `"device": "meta:0"`} {
		if !strings.Contains(js, s) {
			t.Errorf("timeline JSON lacks %s", s)
		}
	}
	back, err := device.ReadTimeline(&buf)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back, tl) {
		t.Errorf("ReadTimeline(WriteJSON(tl)) differs:\n%+v\nwant\n%+v", back, tl)
	}
}

func TestTimelineRestart(t *testing.T) {
	d := meta.New(0, device.Options{Capacity: 4 * mib})
	d.StartTimeline()
	mustAlloc(t, d, 10, device.Other, "x").Release()
	d.StartTimeline() // discards the first recording
	mustAlloc(t, d, 20, device.Other, "y").Release()
	tl := d.StopTimeline()
	if len(tl.Events) != 2 || tl.Events[0].Bytes != 20 || tl.Events[0].Seq != 0 || tl.Capacity != 4*mib {
		t.Errorf("restarted timeline = %+v", tl)
	}
}

func TestTimelinePeakEmpty(t *testing.T) {
	var tl device.Timeline
	if n, at := tl.Peak(); n != 0 || at != -1 {
		t.Errorf("empty Peak() = %d, %d; want 0, -1", n, at)
	}
	tl.Events = []device.Event{{Allocated: 5}, {Allocated: 9}, {Allocated: 9}, {Allocated: 1}}
	if n, at := tl.Peak(); n != 9 || at != 1 {
		t.Errorf("Peak() = %d at %d, want 9 at the first event that reached it, 1", n, at)
	}
}

func TestReadTimelineErrors(t *testing.T) {
	for _, in := range []string{"", "{", `{"events": [{"tag": "weights"}]}`, `[1, 2]`} {
		if _, err := device.ReadTimeline(strings.NewReader(in)); err == nil {
			t.Errorf("ReadTimeline(%q) succeeded", in)
		}
	}
}
