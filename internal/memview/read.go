package memview

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
)

// Decoded is one run read back from a page: what Write was given, less the
// run's Source (its events are here, decoded).
type Decoded struct {
	Name     string
	Device   string
	Capacity int64
	// Base is what each tag held before the first event (as Write stored
	// it: the run's own, or the least that keeps every tag non-negative)
	// and BaseReserved the reserved bytes then.
	Base         [NumTags]int64
	BaseReserved int64
	// Events are the run's events. A free or retag carries its block's
	// address and its alloc's scope, op and phase, as a device records them.
	Events []Event
}

// headerOpen and dataOpen begin the page's header and the runs' streams.
const (
	headerOpen = `<script type="application/json" id="runs">`
	dataOpen   = `<script type="application/octet-stream" id="data%d">`
	scriptEnd  = `</script>`
)

// Read reads the runs back from a page that Write wrote: the way to view
// or compare a run whose page is all that was kept. A file that is not
// such a page is an error saying so.
func Read(page []byte) ([]Decoded, error) {
	head, ok := between(page, headerOpen)
	if !ok {
		return nil, fmt.Errorf("memview: not a memory-viewer page (no %s)", headerOpen)
	}
	var hs []*encoded
	if err := json.Unmarshal(head, &hs); err != nil {
		return nil, fmt.Errorf("memview: the page's header: %w", err)
	}
	runs := make([]Decoded, len(hs))
	for i, h := range hs {
		b64, ok := between(page, fmt.Sprintf(dataOpen, i))
		if !ok {
			return nil, fmt.Errorf("memview: the page lacks the events of run %d (%q)", i, h.Name)
		}
		data, err := base64.StdEncoding.DecodeString(string(b64))
		if err != nil {
			return nil, fmt.Errorf("memview: the events of run %q: %w", h.Name, err)
		}
		h.data = data
		if runs[i], err = decodeRun(h); err != nil {
			return nil, fmt.Errorf("run %q: %w", h.Name, err)
		}
	}
	return runs, nil
}

// between returns what follows open in page up to the next </script>.
func between(page []byte, open string) ([]byte, bool) {
	i := bytes.Index(page, []byte(open))
	if i < 0 {
		return nil, false
	}
	rest := page[i+len(open):]
	j := bytes.Index(rest, []byte(scriptEnd))
	if j < 0 {
		return nil, false
	}
	return rest[:j], true
}

// decodeRun decodes a run's stream into events.
func decodeRun(h *encoded) (Decoded, error) {
	r := Decoded{Name: h.Name, Device: h.Device, Capacity: h.Capacity, Base: h.BaseByTag, BaseReserved: h.BaseReserved}
	if h.N < 0 || h.N > len(h.data) { // an event takes two bytes at least
		return r, fmt.Errorf("memview: %d events in a stream of %d bytes", h.N, len(h.data))
	}
	notes := map[int]string{}
	for _, o := range h.OOMs {
		notes[o.I] = o.Text
	}
	c := &cursor{d: h.data}
	r.Events = make([]Event, h.N)
	bs := blocks{live: map[uint64]int{}, last: map[int]int{}}
	var t int64
	for i := range h.N {
		s, err := c.next(i)
		if err != nil {
			return r, err
		}
		if s.label >= len(h.Labels) {
			return r, fmt.Errorf("memview: event %d: label %d of %d", i, s.label, len(h.Labels))
		}
		t += int64(s.dt)
		e := Event{T: t, Kind: s.kind, Tag: s.tag, Bytes: s.bytes, Addr: s.addr}
		if s.kind == OOM {
			e.Detail = notes[i]
		}
		if err := bs.track(r.Events, i, s, &e); err != nil {
			return r, err
		}
		if s.label >= 0 {
			l := h.Labels[s.label]
			e.Scope, e.Op, e.Phase = l[0], l[1], l[2]
		}
		r.Events[i] = e
	}
	if c.p != len(c.d) {
		return r, fmt.Errorf("memview: %d bytes after the last of %d events", len(c.d)-c.p, h.N)
	}
	return r, nil
}

// blocks follows the recorded blocks while a stream is decoded: the live
// ones by address (their alloc's index) and the retag that last labelled
// each.
type blocks struct {
	live map[uint64]int
	last map[int]int
}

// track checks event i (e, decoded from s) against the live blocks and
// fills a free's or retag's bytes, address and label from its block. A
// stream that no device could have recorded — an alloc where a block is
// live, a reference back to anything but a live block's alloc — is an
// error.
func (b *blocks) track(evs []Event, i int, s step, e *Event) error {
	switch {
	case s.kind == Alloc:
		if _, ok := b.live[e.Addr]; ok {
			return fmt.Errorf("memview: event %d allocates at %#x, where a block is live", i, e.Addr)
		}
		b.live[e.Addr] = i
	case s.kind != Free && s.kind != Retag:
	case s.back == 0:
		if _, ok := b.live[e.Addr]; ok {
			return fmt.Errorf("memview: event %d frees or retags an unrecorded block at %#x, where a recorded one is live", i, e.Addr)
		}
	default:
		at := i - s.back
		if evs[at].Kind != Alloc || b.live[evs[at].Addr] != at {
			return fmt.Errorf("memview: event %d refers back to event %d, not a live block's alloc", i, at)
		}
		a := &evs[at]
		if k, ok := b.last[at]; ok {
			a = &evs[k] // the label as the block's last retag left it
		}
		e.Bytes, e.Addr, e.Scope, e.Op, e.Phase = a.Bytes, a.Addr, a.Scope, a.Op, a.Phase
		if s.kind == Retag {
			b.last[at] = i
		} else {
			delete(b.live, a.Addr)
			delete(b.last, at)
		}
	}
	return nil
}
