package device

import (
	"encoding/json"
	"fmt"
	"io"
	"time"
)

// Event kinds in a Timeline.
const (
	evAlloc        = "alloc"
	evFree         = "free"
	evRetag        = "retag"
	evSegmentAlloc = "segment_alloc"
	evSegmentFree  = "segment_free"
	evOOM          = "oom"
)

// Event is one change of a device's memory.
type Event struct {
	// T is nanoseconds since the timeline started; Seq orders events.
	T   int64 `json:"t_ns"`
	Seq int   `json:"seq"`
	// Kind is alloc, free, retag (a block moved to Tag), segment_alloc,
	// segment_free, segment_commit, segment_decommit or oom. Tag, Op,
	// Scope and Phase are the block's label (the failed request's for oom);
	// segment events carry the zero label, so their Tag reads "parameter"
	// and means nothing. A segment event's Bytes is the change of Reserved:
	// what a new segment commits (all of it, or nothing near the capacity),
	// what a commit or decommit within a segment moves, what a released
	// segment still had committed.
	Kind  string `json:"kind"`
	Bytes int64  `json:"bytes"`
	Addr  uint64 `json:"addr,omitempty"`
	Tag   Tag    `json:"tag"`
	Op    string `json:"op,omitempty"`
	Scope string `json:"scope,omitempty"`
	Phase string `json:"phase,omitempty"`
	// Allocated and Reserved are the device's totals after the event:
	// Allocated the exact bytes of live blocks (Stats.Requested.Current, not
	// the rounded Stats.Allocated), Reserved the committed bytes of its
	// segments.
	Allocated int64 `json:"allocated"`
	Reserved  int64 `json:"reserved"`
	// Detail is an oom event's explanation (the *OOMError's text, less the
	// leading device name).
	Detail string `json:"detail,omitempty"`
}

// Timeline is the recorded history of a device's memory.
type Timeline struct {
	Device   string  `json:"device"`
	Capacity int64   `json:"capacity"`
	Events   []Event `json:"events"`
	// StartByTag is what each tag held when the recording started (nil in
	// files written before it was kept).
	StartByTag *[NumTags]int64 `json:"start_by_tag,omitempty"`
}

type recorder struct {
	start time.Time
	tl    Timeline
}

// StartTimeline begins recording every allocation, free and segment change
// (discarding an earlier recording). Recording costs time and memory per
// event; it is off unless started.
func (d *Device) StartTimeline() {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.tl = &recorder{start: time.Now(), tl: Timeline{Device: d.name, Capacity: d.capacity, StartByTag: new([NumTags]int64)}}
	for t := range NumTags {
		d.tl.tl.StartByTag[t] = d.st.ByTag[t].Current
	}
}

// StopTimeline ends the recording and returns it (nil if none was started).
func (d *Device) StopTimeline() *Timeline {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.tl == nil {
		return nil
	}
	t := &d.tl.tl
	d.tl = nil
	return t
}

// record appends an event; the caller holds d.mu.
func (d *Device) record(kind string, n int64, addr uint64, l Label) {
	if d.tl == nil {
		return
	}
	ev := Event{
		T: int64(time.Since(d.tl.start)), Seq: len(d.tl.tl.Events), Kind: kind, Bytes: n, Addr: addr,
		Tag: l.Tag, Op: l.Op, Scope: l.Scope, Phase: l.Phase,
		Allocated: d.st.Requested.Current, Reserved: d.st.Reserved.Current,
	}
	d.tl.tl.Events = append(d.tl.tl.Events, ev)
}

// WriteJSON writes the timeline as one JSON object.
func (t *Timeline) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", " ")
	if err := enc.Encode(t); err != nil {
		return fmt.Errorf("device: writing timeline of %s: %w", t.Device, err)
	}
	return nil
}

// ReadTimeline reads what WriteJSON wrote and checks that a device could
// have recorded it: a known kind and in-order Seq and times for every
// event, no negative number, Allocated ≤ Reserved, and totals that follow
// from the event before (alloc adds its bytes to Allocated, free subtracts
// them, segment_alloc and segment_commit add to Reserved, segment_free and
// segment_decommit subtract, retag and
// oom change neither; the first event's totals less its own change must
// not be negative). An impossible file is an error naming the event, the
// field and its value.
func ReadTimeline(r io.Reader) (*Timeline, error) {
	var t Timeline
	if err := json.NewDecoder(r).Decode(&t); err != nil {
		return nil, fmt.Errorf("device: reading timeline: %w", err)
	}
	if err := t.check(); err != nil {
		return nil, err
	}
	return &t, nil
}

// check is ReadTimeline's validation of a timeline read from a file.
func (t *Timeline) check() error {
	if t.Capacity < 0 {
		return fmt.Errorf("device: reading timeline of %s: capacity %d is negative", t.Device, t.Capacity)
	}
	for i := range t.Events {
		if err := t.checkEvent(i); err != nil {
			return fmt.Errorf("device: reading timeline of %s: event %d (%s): %w", t.Device, i, t.Events[i].Kind, err)
		}
	}
	return nil
}

// checkEvent checks event i against the one before it.
func (t *Timeline) checkEvent(i int) error {
	e := &t.Events[i]
	var da, dr int64
	switch e.Kind {
	case evAlloc:
		da = e.Bytes
	case evFree:
		da = -e.Bytes
	case evSegmentAlloc, evSegmentCommit:
		dr = e.Bytes
	case evSegmentFree, evSegmentDecommit:
		dr = -e.Bytes
	case evRetag, evOOM:
	default:
		return fmt.Errorf("unknown kind %q (want alloc, free, retag, segment_alloc, segment_free, segment_commit, segment_decommit or oom)", e.Kind)
	}
	prevA, prevR, prevT := int64(0), int64(0), int64(0)
	if i > 0 {
		p := &t.Events[i-1]
		prevA, prevR, prevT = p.Allocated, p.Reserved, p.T
	}
	switch {
	case e.Seq != i:
		return fmt.Errorf("seq %d, want %d (events in recording order)", e.Seq, i)
	case e.T < prevT:
		return fmt.Errorf("t_ns %d is before the previous event's %d", e.T, prevT)
	case e.Bytes < 0 || e.Allocated < 0 || e.Reserved < 0:
		return fmt.Errorf("bytes %d, allocated %d, reserved %d: want none negative", e.Bytes, e.Allocated, e.Reserved)
	case e.Allocated > e.Reserved:
		return fmt.Errorf("allocated %d is above reserved %d", e.Allocated, e.Reserved)
	case i == 0 && (e.Allocated-da < 0 || e.Reserved-dr < 0):
		return fmt.Errorf("allocated %d and reserved %d are below what %d bytes of %s need", e.Allocated, e.Reserved, e.Bytes, e.Kind)
	case i > 0 && (e.Allocated != prevA+da || e.Reserved != prevR+dr):
		return fmt.Errorf("allocated %d and reserved %d do not follow from the previous event's %d and %d and %d bytes of %s",
			e.Allocated, e.Reserved, prevA, prevR, e.Bytes, e.Kind)
	}
	return nil
}

// Peak returns the largest Allocated value in the timeline and the index of
// the first event that reached it (-1 for an empty timeline).
func (t *Timeline) Peak() (bytes int64, at int) {
	at = -1
	for i, e := range t.Events {
		if at < 0 || e.Allocated > bytes {
			bytes, at = e.Allocated, i
		}
	}
	return bytes, at
}
