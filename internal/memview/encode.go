package memview

import (
	"encoding/binary"
	"fmt"
)

// Event kinds, as the page knows them.
const (
	Alloc uint8 = iota
	Free
	Retag
	SegmentAlloc
	SegmentFree
	OOM
	SegmentCommit
	SegmentDecommit
	numKinds
)

// NumTags is the number of tags the page colours (a tag is 0 ≤ tag < NumTags).
const NumTags = 7

// Event is one memory event as the viewer needs it.
type Event struct {
	T                int64 // nanoseconds since the start
	Kind             uint8 // Alloc … SegmentDecommit
	Tag              uint8 // the block's tag (the new tag for Retag)
	Bytes            int64
	Addr             uint64
	Scope, Op, Phase string
	// Detail explains an OOM event (the *OOMError's text).
	Detail string
}

// Source is a run's events, read one at a time so that a large timeline is
// never copied.
type Source interface {
	Len() int
	At(i int) Event
}

// Run is one timeline to show.
type Run struct {
	Name     string
	Device   string
	Capacity int64
	Events   Source
	// Base is what each tag held before the first event, and BaseReserved
	// the reserved bytes then, when known; nil: the page infers the least
	// base that keeps every tag's bytes from going negative.
	Base         *[NumTags]int64
	BaseReserved int64
}

// encoded is a run as the page reads it: a header and the event stream.
type encoded struct {
	Name          string         `json:"name"`
	Device        string         `json:"device"`
	Capacity      int64          `json:"capacity"`
	N             int            `json:"n"`
	BaseAllocated int64          `json:"baseAllocated"`
	BaseReserved  int64          `json:"baseReserved"`
	BaseByTag     [NumTags]int64 `json:"baseByTag"`
	Labels        [][3]string    `json:"labels"`
	OOMs          []oomNote      `json:"ooms"`
	data          []byte
}

type oomNote struct {
	I    int    `json:"i"`
	Text string `json:"text"`
}

type label struct{ scope, op, phase string }

// liveBlock is a block's alloc event, current tag and label index.
type liveBlock struct {
	at    int
	tag   uint8
	label int
}

// relabelled marks, in a free's or retag's kind byte, a label that differs
// from its alloc's (a block renamed after it was made); the label follows.
const relabelled = 1 << 6

// encoder holds the state of one run's encoding.
type encoder struct {
	out      []byte
	labels   map[label]int
	blocks   map[uint64]liveBlock // by address
	prevT    int64
	prevAddr uint64
	tagSum   [NumTags]int64
	tagMin   [NumTags]int64
	alloc    int64 // allocated bytes relative to the start
	res      int64
	minAlloc int64
	minRes   int64
}

// encode turns a run into its header and byte stream. Per event: one byte
// kind|tag<<3, the time delta as uvarint, then by kind — alloc: bytes,
// address delta (zigzag), label; free and retag: distance back to the
// block's alloc (0: a block older than the recording, then its bytes,
// address delta and label), then the label when the kind byte has bit 6
// set (a block renamed since its alloc);
// segment events: bytes, address delta; oom: bytes, label.
func encode(r Run) (*encoded, error) {
	n := r.Events.Len()
	e := &encoder{labels: map[label]int{}, blocks: map[uint64]liveBlock{}}
	h := &encoded{Name: r.Name, Device: r.Device, Capacity: r.Capacity, N: n, OOMs: []oomNote{}}
	for i := range n {
		ev := r.Events.At(i)
		if ev.Kind >= numKinds || ev.Tag >= NumTags || ev.Bytes < 0 || ev.T < e.prevT {
			return nil, fmt.Errorf("memview: run %q event %d: kind %d, tag %d, bytes %d, t %d: want a kind < %d, a tag < %d, bytes ≥ 0 and times in order",
				r.Name, i, ev.Kind, ev.Tag, ev.Bytes, ev.T, numKinds, NumTags)
		}
		if ev.Kind == OOM {
			h.OOMs = append(h.OOMs, oomNote{I: i, Text: ev.Detail})
		}
		e.event(i, ev)
	}
	h.base(r, e)
	h.Labels = make([][3]string, len(e.labels))
	for l, k := range e.labels {
		h.Labels[k] = [3]string{l.scope, l.op, l.phase}
	}
	h.data = e.out
	return h, nil
}

func (e *encoder) uv(v uint64) { e.out = binary.AppendUvarint(e.out, v) }

func (e *encoder) addr(a uint64) {
	e.out = binary.AppendVarint(e.out, int64(a-e.prevAddr))
	e.prevAddr = a
}

func (e *encoder) label(ev Event) int {
	k := e.labelOf(ev)
	e.uv(uint64(k))
	return k
}

// labelOf returns ev's label index, adding it to the table when new,
// without writing it.
func (e *encoder) labelOf(ev Event) int {
	l := label{ev.Scope, ev.Op, ev.Phase}
	k, ok := e.labels[l]
	if !ok {
		k = len(e.labels)
		e.labels[l] = k
	}
	return k
}

// event appends event i.
func (e *encoder) event(i int, ev Event) {
	at := len(e.out)
	e.out = append(e.out, ev.Kind|ev.Tag<<3)
	e.uv(uint64(ev.T - e.prevT))
	e.prevT = ev.T
	switch ev.Kind {
	case Alloc:
		e.uv(uint64(ev.Bytes))
		e.addr(ev.Addr)
		e.blocks[ev.Addr] = liveBlock{i, ev.Tag, e.label(ev)}
		e.count(ev.Tag, ev.Bytes)
	case Free, Retag:
		e.block(i, ev, at)
	case OOM:
		e.uv(uint64(ev.Bytes))
		e.label(ev)
	default:
		e.uv(uint64(ev.Bytes))
		e.addr(ev.Addr)
		if ev.Kind == SegmentAlloc || ev.Kind == SegmentCommit {
			e.res += ev.Bytes
		} else {
			e.res -= ev.Bytes
			e.minRes = min(e.minRes, e.res)
		}
	}
}

// block appends a free's or retag's reference to its block and counts it.
// A retag of a block older than the recording moves its bytes from an
// unknown tag; the page (and the base per tag) charge them to other.
// at is the event's kind byte, marked relabelled when its label is not
// its alloc's.
func (e *encoder) block(i int, ev Event, at int) {
	b, ok := e.blocks[ev.Addr]
	if ok {
		e.uv(uint64(i - b.at))
		if k := e.labelOf(ev); k != b.label {
			e.out[at] |= relabelled
			e.uv(uint64(k))
			b.label = k
		}
	} else {
		e.uv(0)
		e.uv(uint64(ev.Bytes))
		e.addr(ev.Addr)
		e.label(ev)
		b.tag = NumTags - 1
	}
	if ev.Kind == Free {
		delete(e.blocks, ev.Addr)
		e.count(ev.Tag, -ev.Bytes)
		return
	}
	e.tagAdd(b.tag, -ev.Bytes)
	e.tagAdd(ev.Tag, ev.Bytes)
	if ok {
		e.blocks[ev.Addr] = liveBlock{b.at, ev.Tag, b.label}
	}
}

// count adds n bytes of tag to the running sums.
func (e *encoder) count(tag uint8, n int64) {
	e.tagAdd(tag, n)
	e.alloc += n
	e.minAlloc = min(e.minAlloc, e.alloc)
}

// tagAdd adds n bytes to one tag's running sum.
func (e *encoder) tagAdd(tag uint8, n int64) {
	e.tagSum[tag] += n
	e.tagMin[tag] = min(e.tagMin[tag], e.tagSum[tag])
}

// base sets the bytes live before the first event: the run's when known,
// else the least that keeps the running sums from going negative.
func (h *encoded) base(r Run, e *encoder) {
	if r.Base != nil {
		h.BaseByTag, h.BaseReserved = *r.Base, r.BaseReserved
		for _, n := range r.Base {
			h.BaseAllocated += n
		}
		return
	}
	for t := range NumTags {
		h.BaseByTag[t] = -e.tagMin[t]
	}
	h.BaseAllocated, h.BaseReserved = -e.minAlloc, -e.minRes
}
