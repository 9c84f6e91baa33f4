package device

import "fmt"

// Reasons of an OOMError (its Reason field).
const (
	// ReasonTooLarge: the block alone is larger than the capacity.
	ReasonTooLarge = "too_large"
	// ReasonFull: the live blocks and the block together pass the
	// capacity. Cached free memory cannot help: the allocator gives all of
	// it back before it fails, whenever that makes room.
	ReasonFull = "full"
	// ReasonBackend: the backend could not supply a new segment (Cause).
	ReasonBackend = "backend"
)

// explain fills in where the failed request's block would have gone and
// why it could not. The caller holds d.mu.
func (d *Device) explain(e *OOMError, p placement) {
	e.Pool = "large"
	if p.small {
		e.Pool = "small"
	}
	e.Block, e.NewSegment = p.block, p.segSize
	if p.c != nil {
		e.FreeChunk = p.c.size
	}
	e.Occupied = d.st.Allocated.Current
	switch {
	case e.Cause != nil:
		e.Reason = ReasonBackend
		return
	case e.Block > e.Capacity:
		e.Reason = ReasonTooLarge
	default:
		e.Reason = ReasonFull
	}
	e.Short = e.Occupied + e.Block - e.Capacity
}

// poolText describes a pool by its geometry.
func poolText(pool string) string {
	if pool == "small" {
		return "the small pool (blocks of at most 1 MiB, carved from 2 MiB segments)"
	}
	return "the large pool (blocks over 1 MiB, from 20 MiB segments under 10 MiB, else from a segment of their own)"
}

// why renders the lines of Error that say where the block would have gone
// and why it could not, each starting with a newline.
func (e *OOMError) why() string {
	block := FormatBytes(e.Block) + " block"
	if rounded := RoundSize(e.Requested); e.Block > rounded {
		block += fmt.Sprintf(" (the whole free space: a remainder of %s is too small to split off)", FormatBytes(e.Block-rounded))
	}
	where := "in a new " + FormatBytes(e.NewSegment) + " segment"
	if e.FreeChunk > 0 {
		where = "in a free " + FormatBytes(e.FreeChunk) + " chunk not backed by memory"
	}
	s := fmt.Sprintf("\n  why: it needs a %s from %s, %s", block, poolText(e.Pool), where)
	switch e.Reason {
	case ReasonTooLarge:
		s += fmt.Sprintf("\n  why: the block alone is larger than the %s capacity", FormatBytes(e.Capacity))
	case ReasonFull:
		s += fmt.Sprintf("\n  why: the live blocks occupy %s of the %s capacity, %s too much for this block", FormatBytes(e.Occupied), FormatBytes(e.Capacity), FormatBytes(e.Short))
		if cached := e.Reserved - e.Occupied; cached > 0 {
			s += fmt.Sprintf("; the %s of cached free memory cannot help: the allocator gives it back itself before it fails", FormatBytes(cached))
		} else {
			s += "; no cached free memory is left"
		}
	case ReasonBackend:
		s += "\n  why: the backend could not supply the memory"
	}
	return s
}

// reasonHints returns the advice that follows from an OOM's reason.
func reasonHints(e *OOMError) []string {
	switch e.Reason {
	case ReasonTooLarge:
		what := fmt.Sprintf("this single request (%s)", FormatBytes(e.Requested))
		if e.Block > RoundSize(e.Requested) {
			what = fmt.Sprintf("this single request's block (%s, for %s)", FormatBytes(e.Block), FormatBytes(e.Requested))
		}
		return []string{fmt.Sprintf("%s is larger than the whole capacity (%s): shrink the tensor (batch, sequence or width) or raise the capacity",
			what, FormatBytes(e.Capacity))}
	case ReasonFull:
		return []string{fmt.Sprintf("EmptyCache would not help and fragmentation is not the cause: live memory must shrink by at least %s (or the capacity grow by as much)",
			FormatBytes(e.Short))}
	}
	return nil
}
