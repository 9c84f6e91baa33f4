package device

import (
	"fmt"
	"io"

	"github.com/headroom-ml/headroom/internal/memview"
)

// viewKinds maps event kinds to the viewer's.
var viewKinds = map[string]uint8{
	evAlloc: memview.Alloc, evFree: memview.Free, evRetag: memview.Retag,
	evSegmentAlloc: memview.SegmentAlloc, evSegmentFree: memview.SegmentFree, evOOM: memview.OOM,
	evSegmentCommit: memview.SegmentCommit, evSegmentDecommit: memview.SegmentDecommit,
}

// viewSource reads a timeline's events for the viewer.
type viewSource struct{ t *Timeline }

func (s viewSource) Len() int { return len(s.t.Events) }

func (s viewSource) At(i int) memview.Event {
	e := &s.t.Events[i]
	k, ok := viewKinds[e.Kind]
	if !ok {
		k = 255 // refused by the viewer with the event's index
	}
	return memview.Event{T: e.T, Kind: k, Tag: uint8(e.Tag), Bytes: e.Bytes, Addr: e.Addr,
		Scope: e.Scope, Op: e.Op, Phase: e.Phase, Detail: e.Detail}
}

func (t *Timeline) viewRun(name string) memview.Run {
	if name == "" {
		name = t.Device
	}
	r := memview.Run{Name: name, Device: t.Device, Capacity: t.Capacity, Events: viewSource{t}}
	if t.StartByTag != nil && len(t.Events) > 0 {
		var b [memview.NumTags]int64
		for i, n := range t.StartByTag {
			b[i] = n
		}
		r.Base, r.BaseReserved = &b, t.Events[0].Reserved-reservedChange(&t.Events[0])
	}
	return r
}

// WriteHTML writes the timeline as one self-contained interactive HTML page
// (memory over time by tag, the live blocks at any instant, segments, OOMs;
// see package internal/memview for the format and its size).
func (t *Timeline) WriteHTML(w io.Writer) error {
	if err := memview.Write(w, t.viewRun("")); err != nil {
		return fmt.Errorf("device: timeline of %s: %w", t.Device, err)
	}
	return nil
}

// WriteHTMLCompare writes one page showing timelines a and b side by side,
// aligned by step phase, with the difference per tag at their peaks.
func WriteHTMLCompare(w io.Writer, a, b *Timeline, nameA, nameB string) error {
	if err := memview.Write(w, a.viewRun(nameA), b.viewRun(nameB)); err != nil {
		return fmt.Errorf("device: comparing timelines: %w", err)
	}
	return nil
}

// ViewedPeak is the peak of a timeline as its HTML page shows it.
type ViewedPeak struct {
	// At is the index of the last alloc event whose total is the largest
	// (the instant Stats.AtPeak describes); -1 without allocs.
	At int
	// Total is the requested bytes there; ByTag splits it by tag.
	Total int64
	ByTag [NumTags]int64
}

// ViewPeak returns the peak as the HTML page computes it from its encoded
// events: the last alloc reaching the largest total, and its bytes per tag.
func (t *Timeline) ViewPeak() (ViewedPeak, error) {
	p, err := memview.PeakOf(t.viewRun(""))
	return ViewedPeak{At: p.At, Total: p.Total, ByTag: p.ByTag}, err
}

// reservedChange is what event e added to Reserved.
func reservedChange(e *Event) int64 {
	switch e.Kind {
	case evSegmentAlloc, evSegmentCommit:
		return e.Bytes
	case evSegmentFree, evSegmentDecommit:
		return -e.Bytes
	}
	return 0
}

// The viewer's tags are the device's.
var (
	_ [memview.NumTags - NumTags]struct{}
	_ [NumTags - memview.NumTags]struct{}
)
