package bench

import (
	"fmt"
	"strings"

	"github.com/headroom-ml/headroom/device"
)

// TagTotal is one tag's traffic in a timeline: bytes allocated (and
// retagged into it) and freed (and retagged out of it), and their counts.
type TagTotal struct {
	Tag       string `json:"tag"`
	Allocated int64  `json:"allocated"`
	Freed     int64  `json:"freed"`
	Allocs    int    `json:"allocs"`
	Frees     int    `json:"frees"`
}

// Net is the tag's change over the timeline.
func (t TagTotal) Net() int64 { return t.Allocated - t.Freed }

// TimelineSummary is what a recorded timeline says: its peak, the events
// around it and each tag's traffic.
type TimelineSummary struct {
	Device   string `json:"device"`
	Capacity int64  `json:"capacity"`
	Events   int    `json:"events"`
	// Millis is the time from the first event to the last.
	Millis float64 `json:"millis"`
	// PeakBytes is the largest exact allocated total, first reached at
	// event PeakEvent; Start and End are the totals after the first and
	// the last event.
	PeakBytes  int64 `json:"peak_bytes"`
	PeakEvent  int   `json:"peak_event"`
	Start, End int64 `json:"-"`
	// Around are the events around the peak.
	Around []device.Event `json:"around_peak"`
	// ByTag totals alloc, free and retag events per tag (tags without
	// traffic are left out).
	ByTag []TagTotal `json:"by_tag"`
}

// Summarize reads a timeline: its peak with the n events before and after
// it, and each tag's traffic. A retag counts as a free under the block's
// old tag (when its allocation was recorded) and an allocation under the
// new one.
func Summarize(t *device.Timeline, n int) TimelineSummary {
	s := TimelineSummary{Device: t.Device, Capacity: t.Capacity, Events: len(t.Events), PeakEvent: -1}
	if len(t.Events) == 0 {
		return s
	}
	s.Millis = float64(t.Events[len(t.Events)-1].T-t.Events[0].T) / 1e6
	s.PeakBytes, s.PeakEvent = t.Peak()
	s.Start, s.End = t.Events[0].Allocated, t.Events[len(t.Events)-1].Allocated
	lo, hi := max(s.PeakEvent-n, 0), min(s.PeakEvent+n+1, len(t.Events))
	s.Around = append(s.Around, t.Events[lo:hi]...)
	var tot [device.NumTags]TagTotal
	tagOf := map[uint64]device.Tag{} // live blocks' tags, by address
	in := func(tg device.Tag, b int64) { tot[tg].Allocated += b; tot[tg].Allocs++ }
	out := func(tg device.Tag, b int64) { tot[tg].Freed += b; tot[tg].Frees++ }
	for _, e := range t.Events {
		if e.Tag >= device.NumTags {
			continue
		}
		switch e.Kind {
		case "alloc":
			in(e.Tag, e.Bytes)
			tagOf[e.Addr] = e.Tag
		case "free":
			out(e.Tag, e.Bytes)
			delete(tagOf, e.Addr)
		case "retag":
			if old, ok := tagOf[e.Addr]; ok {
				out(old, e.Bytes)
			}
			in(e.Tag, e.Bytes)
			tagOf[e.Addr] = e.Tag
		}
	}
	for _, tg := range device.Tags() {
		if tot[tg].Allocs+tot[tg].Frees > 0 {
			tot[tg].Tag = tg.String()
			s.ByTag = append(s.ByTag, tot[tg])
		}
	}
	return s
}

// String renders the summary as text.
func (s TimelineSummary) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "timeline of %s: %d events over %.1f ms", s.Device, s.Events, s.Millis)
	if s.Capacity > 0 {
		fmt.Fprintf(&b, ", capacity %s", device.FormatBytes(s.Capacity))
	}
	b.WriteString("\n")
	if s.Events == 0 {
		return b.String()
	}
	fmt.Fprintf(&b, "peak %s (%d B) at event %d; %s after the first event, %s after the last\n",
		device.FormatBytes(s.PeakBytes), s.PeakBytes, s.PeakEvent, device.FormatBytes(s.Start), device.FormatBytes(s.End))
	b.WriteString("\nevents around the peak:\n")
	fmt.Fprintf(&b, "  %6s %9s  %-13s %12s  %-13s %-9s %-40s %12s\n", "event", "ms", "kind", "bytes", "tag", "phase", "creator", "allocated")
	for _, e := range s.Around {
		mark := " "
		if e.Seq == s.PeakEvent {
			mark = "*"
		}
		tag := e.Tag.String()
		if strings.HasPrefix(e.Kind, "segment") {
			tag = "–"
		}
		creator := device.Label{Op: e.Op, Scope: e.Scope}.Creator()
		fmt.Fprintf(&b, "%s %6d %9.3f  %-13s %12d  %-13s %-9s %-40s %12d\n", mark, e.Seq, float64(e.T)/1e6, e.Kind, e.Bytes, tag,
			orDash(e.Phase), clip(creator, 40), e.Allocated)
	}
	b.WriteString("\ntraffic by tag:\n")
	fmt.Fprintf(&b, "  %-13s %14s %8s %14s %8s %14s\n", "tag", "allocated", "allocs", "freed", "frees", "net")
	for _, t := range s.ByTag {
		fmt.Fprintf(&b, "  %-13s %14s %8d %14s %8d %14s\n", t.Tag, device.FormatBytes(t.Allocated), t.Allocs,
			device.FormatBytes(t.Freed), t.Frees, device.FormatBytes(t.Net()))
	}
	return b.String()
}

func orDash(s string) string {
	if s == "" {
		return "–"
	}
	return s
}

// clip shortens s to n runes, keeping its end (the op).
func clip(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return "…" + string(r[len(r)-n+1:])
}
