package device

import (
	"fmt"
	"io"

	"github.com/headroom-ml/headroom/internal/memview"
)

// ReadHTML reads the timelines back from a page that WriteHTML (one) or
// WriteHTMLCompare (two) wrote, so a run whose page is all that was kept
// can be viewed again or compared. The events are the recorded ones, Seq,
// Allocated and Reserved recomputed from the bytes live before the
// recording; the result is checked as ReadTimeline checks a JSON file.
func ReadHTML(r io.Reader) ([]*Timeline, error) {
	page, err := io.ReadAll(r)
	if err != nil {
		return nil, fmt.Errorf("device: reading a memory page: %w", err)
	}
	runs, err := memview.Read(page)
	if err != nil {
		return nil, fmt.Errorf("device: reading a memory page: %w", err)
	}
	tls := make([]*Timeline, len(runs))
	for i, run := range runs {
		if tls[i], err = timelineOf(run); err != nil {
			return nil, err
		}
	}
	return tls, nil
}

// kindNames maps the viewer's event kinds back to the device's.
var kindNames = func() map[uint8]string {
	m := map[uint8]string{}
	for name, k := range viewKinds {
		m[k] = name
	}
	return m
}()

// timelineOf turns a run read from a page into a checked timeline.
func timelineOf(run memview.Decoded) (*Timeline, error) {
	t := &Timeline{Device: run.Device, Capacity: run.Capacity, StartByTag: new([NumTags]int64), Events: make([]Event, len(run.Events))}
	var alloc int64
	for i, n := range run.Base {
		t.StartByTag[i] = n
		alloc += n
	}
	res := run.BaseReserved
	for i, v := range run.Events {
		e := Event{T: v.T, Seq: i, Kind: kindNames[v.Kind], Bytes: v.Bytes, Addr: v.Addr, Tag: Tag(v.Tag),
			Op: v.Op, Scope: v.Scope, Phase: v.Phase, Detail: v.Detail}
		switch e.Kind {
		case evAlloc:
			alloc += e.Bytes
		case evFree:
			alloc -= e.Bytes
		}
		res += reservedChange(&e)
		e.Allocated, e.Reserved = alloc, res
		t.Events[i] = e
	}
	if err := t.check(); err != nil {
		return nil, err
	}
	return t, nil
}
