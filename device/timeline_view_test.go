package device_test

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/headroom-ml/headroom/device"
	"github.com/headroom-ml/headroom/device/meta"
)

// olderBlocks records a timeline whose first events free and retag blocks
// allocated before the recording started, then allocates and frees one,
// and one more that is relabelled (Block.Relabel) and retagged before its
// free.
func olderBlocks(t *testing.T) *device.Timeline {
	t.Helper()
	d := meta.New(0, device.Options{})
	a := d.MustAlloc(3000, device.Label{Tag: device.Activation, Op: "conv2d", Scope: "layer0", Phase: "forward"})
	w := d.MustAlloc(500, device.Label{Tag: device.Workspace, Op: "matmul_backward", Phase: "backward"})
	d.StartTimeline()
	a.Release()
	w.Retag(device.Gradient)
	d.MustAlloc(700, device.Label{Tag: device.Optimizer, Op: "adam", Phase: "optimizer"}).Release()
	r := d.MustAlloc(300, device.Label{Tag: device.Workspace, Op: "new"})
	r.Relabel("clip_grad_norm", "gpt")
	r.Retag(device.Other)
	r.Release()
	return d.StopTimeline()
}

// TestReadHTMLRoundTrip: the timelines read back from a page equal the
// recorded ones event for event (frees and retags of blocks older than the
// recording or relabelled since their alloc, segments and an OOM with its
// text included), for one run's
// page and for the compare page's two.
func TestReadHTMLRoundTrip(t *testing.T) {
	a, _ := simulate(t, 3000, 21, 777)
	appendOOM(t, a)
	b := olderBlocks(t)
	for _, tls := range [][]*device.Timeline{{a}, {b}, {busyTimeline(t)}, {a, b}} {
		var page bytes.Buffer
		var err error
		if len(tls) == 2 {
			err = device.WriteHTMLCompare(&page, tls[0], tls[1], "a", "b")
		} else {
			err = tls[0].WriteHTML(&page)
		}
		if err != nil {
			t.Fatal(err)
		}
		back, err := device.ReadHTML(&page)
		if err != nil {
			t.Fatalf("ReadHTML: %v", err)
		}
		if len(back) != len(tls) {
			t.Fatalf("ReadHTML: %d timelines, want %d", len(back), len(tls))
		}
		for i := range tls {
			if !reflect.DeepEqual(back[i], tls[i]) {
				t.Errorf("timeline %d of %d read back differs: first difference %s", i, len(tls), firstDiff(back[i], tls[i]))
			}
		}
	}
}

// firstDiff describes the first field where two timelines differ.
func firstDiff(got, want *device.Timeline) string {
	if got.Device != want.Device || got.Capacity != want.Capacity || !reflect.DeepEqual(got.StartByTag, want.StartByTag) {
		return "in the header"
	}
	for i := range min(len(got.Events), len(want.Events)) {
		if got.Events[i] != want.Events[i] {
			return fmt.Sprintf("event %d: %+v, want %+v", i, got.Events[i], want.Events[i])
		}
	}
	return fmt.Sprintf("in the event count %d, want %d", len(got.Events), len(want.Events))
}

// TestReadHTMLRefuses: a file that is not a page, or a page whose stream
// is cut, is an error saying which.
func TestReadHTMLRefuses(t *testing.T) {
	if _, err := device.ReadHTML(strings.NewReader("<html>hello</html>")); err == nil || !strings.Contains(err.Error(), "not a memory-viewer page") {
		t.Errorf("ReadHTML of another page: %v, want 'not a memory-viewer page'", err)
	}
	tl, _ := simulate(t, 200, 3, 0)
	var page bytes.Buffer
	if err := tl.WriteHTML(&page); err != nil {
		t.Fatal(err)
	}
	s := page.String()
	i := strings.Index(s, `id="data0">`) + len(`id="data0">`)
	cut := s[:i+400] + s[strings.Index(s[i:], "</script>")+i:]
	// The events' time deltas vary in length from run to run, so the cut
	// falls inside an event (malformed) or, now and then, just after one
	// (the stream ends before the events the page declares): both refuse.
	if _, err := device.ReadHTML(strings.NewReader(cut)); err == nil ||
		!strings.Contains(err.Error(), "malformed") && !strings.Contains(err.Error(), "stream ends at event") {
		t.Errorf("ReadHTML of a cut stream: %v, want an event named malformed or the stream's early end", err)
	}
}

// FuzzReadHTML: a page whose event stream is arbitrary bytes is read back
// as an error or as timelines that pass ReadTimeline's checks and survive
// another round trip unchanged; never a panic.
func FuzzReadHTML(f *testing.F) {
	var page bytes.Buffer
	if err := busyTimeline(f).WriteHTML(&page); err != nil {
		f.Fatal(err)
	}
	s := page.String()
	const open = `id="data0">`
	i := strings.Index(s, open) + len(open)
	j := i + strings.Index(s[i:], "</script>")
	stream, err := base64.StdEncoding.DecodeString(s[i:j])
	if err != nil {
		f.Fatal(err)
	}
	f.Add(stream)
	f.Add(stream[:len(stream)/2])
	f.Fuzz(func(t *testing.T, data []byte) {
		p := s[:i] + base64.StdEncoding.EncodeToString(data) + s[j:]
		tls, err := device.ReadHTML(strings.NewReader(p))
		if err != nil {
			return
		}
		var again bytes.Buffer
		if err := tls[0].WriteHTML(&again); err != nil {
			t.Fatalf("a timeline read from a page does not write: %v", err)
		}
		back, err := device.ReadHTML(&again)
		if err != nil || !reflect.DeepEqual(back[0], tls[0]) {
			t.Fatalf("a timeline read from a page does not round-trip: %v", err)
		}
	})
}
