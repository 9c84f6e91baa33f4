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
	// ByTag is the live bytes per tag.
	ByTag [NumTags]int64 `json:"by_tag"`
	// Top lists the largest live allocations grouped by tag and creator.
	Top []LiveGroup `json:"top"`
	// Unsaved lists the live activations no graph node saves (Unsaved).
	Unsaved []LiveGroup `json:"unsaved,omitempty"`
	// Hints are suggestions that follow from the numbers above.
	Hints []string `json:"hints"`
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
	b.WriteString(unsavedReport(e.Unsaved, "\n  "))
	for _, h := range e.Hints {
		b.WriteString("\n  hint: ")
		b.WriteString(h)
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

// oom builds the error for a failed request of n (rounded: size) bytes.
// The caller holds d.mu.
func (d *Device) oom(n, size int64, l Label, cause error) *OOMError {
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
	e.Unsaved = d.unsaved()
	e.Hints = hints(e, size)
	d.record(evOOM, n, 0, l)
	return e
}

// hints derives advice from an OOM's numbers.
func hints(e *OOMError, size int64) []string {
	var hs []string
	if e.Capacity > 0 && size > e.Capacity {
		hs = append(hs, fmt.Sprintf("this single request (%s) is larger than the whole capacity (%s): shrink the tensor (batch, sequence or width) or raise the capacity",
			FormatBytes(e.Requested), FormatBytes(e.Capacity)))
	}
	if e.ReservedUnused >= size && e.LargestFree < size {
		hs = append(hs, fmt.Sprintf("fragmentation: %s is reserved but unused, in blocks smaller than the request; allocate large long-lived tensors first, or free tensors sooner",
			FormatBytes(e.ReservedUnused)))
	}
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
	if len(hs) == 0 && e.Allocated == 0 && e.Capacity > 0 {
		hs = append(hs, "nothing is live: the capacity is too small for this request")
	}
	return hs
}
