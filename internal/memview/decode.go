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

// replay decodes the stream, tracking each block's tag, and returns the
// per-tag bytes at the peak.
func replay(h *encoded) (Peak, error) {
	d, p := h.data, 0
	uv := func() uint64 { v, k := binary.Uvarint(d[p:]); p += k; return v }
	sv := func() { _, k := binary.Varint(d[p:]); p += k }
	tagOf := map[int]uint8{}
	bytesOf := map[int]int64{}
	cur := h.BaseByTag
	total := h.BaseAllocated
	pk := Peak{At: -1}
	for i := range h.N {
		if p >= len(d) {
			return Peak{}, fmt.Errorf("memview: stream ends at event %d of %d", i, h.N)
		}
		k, tag := d[p]&7, d[p]>>3
		p++
		uv()
		switch k {
		case Alloc:
			n := int64(uv())
			sv()
			uv()
			tagOf[i], bytesOf[i] = tag, n
			cur[tag] += n
			total += n
		case Free, Retag:
			old, n := uint8(NumTags-1), int64(0)
			if back := int(uv()); back > 0 {
				old, n = tagOf[i-back], bytesOf[i-back]
				if k == Retag {
					tagOf[i-back] = tag
				}
			} else {
				n = int64(uv())
				old = tag
				if k == Retag {
					old = NumTags - 1
				}
			}
			cur[old] -= n
			if k == Free {
				total -= n
			} else {
				cur[tag] += n
			}
		case OOM:
			uv()
			uv()
		default:
			uv()
			sv()
		}
		if k == Alloc && total >= pk.Total {
			pk = Peak{At: i, Total: total, ByTag: cur}
		}
	}
	return pk, nil
}
