package device

import (
	"fmt"
	"strings"
)

// OOMError reports an allocation that the device's capacity could not hold,
// with the numbers that explain why. Match it with errors.As. After an
// OOMError the device is usable and unchanged apart from its OOMs counter:
// nothing was allocated, and the cache was kept (only a failure of the
// backend itself, reported in Cause, first returns the cache and retries).
// Pool, Block, FreeChunk, NewSegment, Occupied, Reason and Short say where
// the block would have gone and why it could not (see Reason).
type OOMError struct {
	Device string `json:"device"`
	// Requested is the size asked for; Label says what it was for.
	Requested int64 `json:"requested"`
	Label     Label `json:"label"`
	// Capacity is the device's limit on reserved bytes.
	Capacity int64 `json:"capacity"`
	// Allocated is the exact bytes of live blocks.
	Allocated int64 `json:"allocated"`
	// Reserved is the bytes held from the backend; ReservedUnused the part of
	// it that no block uses (cached, fragmented); LargestFree the largest
	// free cached block.
	Reserved       int64 `json:"reserved"`
	ReservedUnused int64 `json:"reserved_unused"`
	LargestFree    int64 `json:"largest_free"`
	// Pool is the pool the request needed: "small" (blocks of at most
	// 1 MiB, carved from 2 MiB segments) or "large" (larger blocks, from
	// 20 MiB segments under 10 MiB, else from a segment of their own).
	Pool string `json:"pool"`
	// Block is the bytes the block would occupy: the request rounded up to
	// 512 B, or the whole free space it would be cut from when the
	// remainder is too small to split off (1 MiB or less, large pool).
	Block int64 `json:"block"`
	// FreeChunk is the free chunk the block would be cut from, one not
	// backed by memory (a committed one always serves); 0 when none holds
	// the block and it would start a new segment of NewSegment bytes.
	FreeChunk  int64 `json:"free_chunk"`
	NewSegment int64 `json:"new_segment"`
	// Occupied is the bytes the live blocks occupy in their segments
	// (Stats.Allocated.Current: Allocated rounded up as the blocks are).
	Occupied int64 `json:"occupied"`
	// Reason is ReasonTooLarge, ReasonFull or ReasonBackend.
	Reason string `json:"reason"`
	// Short is Occupied + Block − Capacity: the live bytes that must go
	// for the block to fit, however much cached memory there is (0 when
	// the backend failed).
	Short int64 `json:"short"`
	// ByTag is the live bytes per tag.
	ByTag [NumTags]int64 `json:"by_tag"`
	// Top lists the largest live allocations grouped by tag and creator.
	Top []LiveGroup `json:"top"`
	// Unsaved lists the live activations no graph node saves (Unsaved).
	Unsaved []LiveGroup `json:"unsaved,omitempty"`
	// Hints are suggestions that follow from the numbers above.
	Hints []string `json:"hints"`
	// DriverFree and DriverTotal are the bytes the hardware's driver
	// reported free and in total at the failure, on backends that know
	// (MemInfo: a GPU); 0 elsewhere.
	DriverFree  int64 `json:"driver_free,omitempty"`
	DriverTotal int64 `json:"driver_total,omitempty"`
	// Cause is the backend's error when the backend itself failed.
	Cause error `json:"-"`
}

// Unwrap returns the backend's error, if any.
func (e *OOMError) Unwrap() error { return e.Cause }

// LargestTag returns the tag holding the most live bytes.
func (e *OOMError) LargestTag() Tag {
	best := Tag(0)
	for t := range NumTags {
		if e.ByTag[t] > e.ByTag[best] {
			best = t
		}
	}
	return best
}

// Error renders the whole explanation: the request, the device's state, the
// largest live tag, the top creators and the hints, one per line.
func (e *OOMError) Error() string {
	var b strings.Builder
	limit := "no capacity set"
	if e.Capacity > 0 {
		limit = "capacity " + FormatBytes(e.Capacity)
	}
	fmt.Fprintf(&b, "%s: out of memory: tried to allocate %s for %s (%s); %s, %s allocated, %s reserved, %s reserved but unused (largest free block %s)",
		e.Device, FormatBytes(e.Requested), e.Label.Tag, e.Label.Creator(), limit,
		FormatBytes(e.Allocated), FormatBytes(e.Reserved), FormatBytes(e.ReservedUnused), FormatBytes(e.LargestFree))
	if e.Allocated > 0 {
		t := e.LargestTag()
		fmt.Fprintf(&b, "\n  largest live tag: %s %s (%.0f%% of allocated)", t, FormatBytes(e.ByTag[t]), pct(e.ByTag[t], e.Allocated))
	}
	for i, g := range e.Top {
		if i == 5 {
			break
		}
		fmt.Fprintf(&b, "\n  live: %-13s %10s in %d block(s) from %s", g.Tag, FormatBytes(g.Bytes), g.Blocks, g.Creator)
	}
	b.WriteString(e.why())
	b.WriteString(unsavedReport(e.Unsaved, "\n  "))
	for _, h := range e.Hints {
		b.WriteString("\n  hint: ")
		b.WriteString(h)
	}
	if e.DriverTotal > 0 {
		fmt.Fprintf(&b, "\n  driver: %s free of %s", FormatBytes(e.DriverFree), FormatBytes(e.DriverTotal))
	}
	if e.Cause != nil {
		fmt.Fprintf(&b, "\n  backend: %v", e.Cause)
	}
	return b.String()
}

func pct(a, b int64) float64 {
	if b == 0 {
		return 0
	}
	return 100 * float64(a) / float64(b)
}

// oom builds the error for a failed request of n bytes that was to go
// where p says. The caller holds d.mu.
func (d *Device) oom(n int64, p placement, l Label, cause error) *OOMError {
	d.st.OOMs++
	e := &OOMError{
		Device: d.name, Requested: n, Label: l, Capacity: d.capacity,
		Allocated: d.st.Requested.Current, Reserved: d.st.Reserved.Current,
		ReservedUnused: d.st.Reserved.Current - d.st.Allocated.Current,
		LargestFree:    d.largestFree(), Cause: cause,
	}
	for t := range NumTags {
		e.ByTag[t] = d.st.ByTag[t].Current
	}
	e.Top = d.liveGroups(func(Tag) bool { return true })
	if len(e.Top) > 10 {
		e.Top = e.Top[:10]
	}
	if mi, ok := d.be.(MemInfo); ok {
		e.DriverFree, e.DriverTotal = mi.MemInfo()
	}
	d.explain(e, p)
	e.Unsaved = d.unsaved()
	e.Hints = hints(e)
	d.record(evOOM, n, 0, l)
	if d.tl != nil {
		evs := d.tl.tl.Events
		evs[len(evs)-1].Detail = strings.TrimPrefix(e.Error(), d.name+": ") // the timeline names the device
	}
	return e
}

// hints derives advice from an OOM's reason and numbers.
func hints(e *OOMError) []string {
	hs := reasonHints(e)
	share := func(t Tag) float64 { return pct(e.ByTag[t], e.Allocated) }
	if s := share(Activation); s >= 40 {
		hs = append(hs, fmt.Sprintf("activations are %.0f%% of use: checkpoint segments of the model, use a smaller micro-batch with gradient accumulation, or autocast to bf16/fp16", s))
	}
	if s := share(Workspace); s >= 25 {
		hs = append(hs, fmt.Sprintf("workspace (op scratch and backward temporaries) is %.0f%% of use: a smaller micro-batch shrinks it", s))
	}
	if s := share(Optimizer); s >= 25 {
		hs = append(hs, fmt.Sprintf("optimizer state is %.0f%% of use: shard it across ranks (ZeRO stage 1) or offload it to the host", s))
	}
	if s := share(Parameter) + share(Gradient); s >= 40 {
		hs = append(hs, fmt.Sprintf("parameters and gradients are %.0f%% of use: low-precision parameters with fp32 master weights halve them; ZeRO stages 2-3, pruning or parameter sharing shrink them", s))
	}
	return hs
}
