package memview

import (
	"encoding/binary"
	"fmt"
)

// Peak is what a run held at its peak, as the page computes it.
type Peak struct {
	// At is the index of the last alloc event whose total is the largest
	// (the instant the allocator's AtPeak describes); -1 without allocs.
	At int
	// Total is the allocated bytes there; ByTag splits it by tag.
	Total int64
	ByTag [NumTags]int64
}

// PeakOf encodes the run as Write does and reads the stream back the way the
// page's script does, returning the peak: the Go twin of the page, used to
// check the format and by commands that print the peak.
func PeakOf(r Run) (Peak, error) {
	h, err := encode(r)
	if err != nil {
		return Peak{}, err
	}
	return replay(h)
}

// step is one event of the stream as decoded (see encode).
type step struct {
	kind, tag uint8
	dt        uint64
	bytes     int64
	// addr is the absolute address where the stream has one (alloc,
	// segment events, a free or retag of a block older than the recording).
	addr uint64
	// back is a free's or retag's distance to its alloc (0: older than the
	// recording); label the label index (-1: none in the stream).
	back  int
	label int
}

// cursor reads a stream event by event.
type cursor struct {
	d    []byte
	p    int
	addr uint64
	bad  bool
}

func (c *cursor) uv() uint64 {
	v, k := binary.Uvarint(c.d[c.p:])
	if k <= 0 {
		c.bad = true
		return 0
	}
	c.p += k
	return v
}

func (c *cursor) delta() uint64 {
	v, k := binary.Varint(c.d[c.p:])
	if k <= 0 {
		c.bad = true
		return c.addr
	}
	c.p += k
	c.addr += uint64(v)
	return c.addr
}

// next decodes event i.
func (c *cursor) next(i int) (step, error) {
	if c.p >= len(c.d) {
		return step{}, fmt.Errorf("memview: stream ends at event %d", i)
	}
	b := c.d[c.p]
	s := step{kind: b & 7, tag: b >> 3 & 7, label: -1}
	c.p++
	s.dt = c.uv()
	switch s.kind {
	case Alloc:
		s.bytes, s.addr, s.label = int64(c.uv()), c.delta(), int(c.uv())
	case Free, Retag:
		if s.back = int(c.uv()); s.back == 0 {
			s.bytes, s.addr, s.label = int64(c.uv()), c.delta(), int(c.uv())
		} else if b&relabelled != 0 {
			s.label = int(c.uv())
		}
	case OOM:
		s.bytes, s.label = int64(c.uv()), int(c.uv())
	default:
		s.bytes, s.addr = int64(c.uv()), c.delta()
	}
	if c.bad || s.back < 0 || s.back > i || s.label < -1 || s.tag >= NumTags || s.bytes < 0 {
		return step{}, fmt.Errorf("memview: event %d is malformed at byte %d of the stream", i, c.p)
	}
	return s, nil
}

// replay decodes the stream, tracking each live block's tag and bytes
// (by its alloc's index), and returns the per-tag bytes at the peak.
func replay(h *encoded) (Peak, error) {
	c := &cursor{d: h.data}
	tagOf := map[int]uint8{}
	bytesOf := map[int]int64{}
	cur := h.BaseByTag
	total := h.BaseAllocated
	pk := Peak{At: -1}
	for i := range h.N {
		s, err := c.next(i)
		if err != nil {
			return Peak{}, err
		}
		switch s.kind {
		case Alloc:
			tagOf[i], bytesOf[i] = s.tag, s.bytes
			cur[s.tag] += s.bytes
			total += s.bytes
		case Free, Retag:
			old, n := uint8(NumTags-1), s.bytes
			if at := i - s.back; s.back > 0 {
				old, n = tagOf[at], bytesOf[at]
				if s.kind == Retag {
					tagOf[at] = s.tag
				} else {
					delete(tagOf, at)
					delete(bytesOf, at)
				}
			} else if s.kind == Free {
				old = s.tag
			}
			cur[old] -= n
			if s.kind == Free {
				total -= n
			} else {
				cur[s.tag] += n
			}
		}
		if s.kind == Alloc && total >= pk.Total {
			pk = Peak{At: i, Total: total, ByTag: cur}
		}
	}
	return pk, nil
}
