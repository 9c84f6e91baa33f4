package device

import (
	"fmt"
	"strings"
)

// Summary renders the device's accounting as a table in the layout of
// torch.cuda.memory_summary: one row per metric and tag, columns for the
// current value, the peak, the total allocated and the total freed; below
// it, when there are any, the live activations that no graph node saves
// (Unsaved), by creator.
func (d *Device) Summary() string { return d.Stats().Summary() + d.unsavedSummary() }

// Summary renders a snapshot as a table; see Device.Summary.
func (s Stats) Summary() string {
	const width = 77
	var b strings.Builder
	rule := func(c byte) { b.WriteString("|" + strings.Repeat(string(c), width-2) + "|\n") }
	center := func(text string) {
		pad := max(width-2-len(text), 0)
		fmt.Fprintf(&b, "|%s%s%s|\n", strings.Repeat(" ", pad/2), text, strings.Repeat(" ", pad-pad/2))
	}
	row := func(name string, cells ...string) {
		fmt.Fprintf(&b, "| %-21s |", name)
		for _, c := range cells {
			fmt.Fprintf(&b, " %10s |", c)
		}
		b.WriteString("\n")
	}
	bytesRow := func(name string, c Counter) {
		row(name, compact(c.Current), compact(c.Peak), compact(c.Allocated), compact(c.Freed))
	}
	countRow := func(name string, c Counter) {
		row(name, fmt.Sprint(c.Allocs-c.Frees), "-", fmt.Sprint(c.Allocs), fmt.Sprint(c.Frees))
	}

	rule('=')
	center(fmt.Sprintf("headroom memory summary, device %s", s.Device))
	rule('-')
	limit := "unlimited"
	if s.Capacity > 0 {
		limit = FormatBytes(s.Capacity)
	}
	center(fmt.Sprintf("capacity: %s   OOMs: %d   cache flushes: %d", limit, s.OOMs, s.CacheFlushes))
	rule('=')
	row("       Metric", "Cur Usage", "Peak Usage", "Tot Alloc", "Tot Freed")
	rule('-')
	bytesRow("Requested memory", s.Requested)
	for t := range NumTags {
		bytesRow("      "+t.String(), s.ByTag[t])
	}
	rule('-')
	bytesRow("Allocated memory", s.Allocated)
	bytesRow("Reserved memory", s.Reserved)
	row("Cached free memory", compact(s.CachedFree()), "-", "-", "-")
	row("Largest free block", compact(s.LargestFree), "-", "-", "-")
	rule('-')
	countRow("Allocations", s.Requested)
	for t := range NumTags {
		countRow("      "+t.String(), s.ByTag[t])
	}
	row("Reserved segments", fmt.Sprint(s.Segments), "-", fmt.Sprint(s.Reserved.Allocs), fmt.Sprint(s.Reserved.Frees))
	rule('-')
	for _, line := range wrap("at peak: ", atPeak(s), width-4) {
		center(line)
	}
	rule('=')
	return b.String()
}

// compact renders bytes in at most 10 characters: "0 B", "512 B", "12.5 KiB".
func compact(n int64) string {
	if n < 1024 {
		return fmt.Sprintf("%d B", n)
	}
	v := float64(n)
	for _, u := range []string{"KiB", "MiB", "GiB", "TiB", "PiB"} {
		v /= 1024
		if v < 1024 || u == "PiB" {
			if v < 100 {
				return fmt.Sprintf("%.1f %s", v, u)
			}
			return fmt.Sprintf("%.0f %s", v, u)
		}
	}
	return fmt.Sprint(n)
}

// atPeak lists the non-zero tags of Stats.AtPeak.
func atPeak(s Stats) []string {
	var parts []string
	for t := range NumTags {
		if s.AtPeak[t] > 0 {
			parts = append(parts, t.String()+" "+compact(s.AtPeak[t]))
		}
	}
	if len(parts) == 0 {
		return []string{"nothing"}
	}
	return parts
}

// wrap joins parts with ", " after prefix into lines of at most width
// bytes, breaking only between parts.
func wrap(prefix string, parts []string, width int) []string {
	var lines []string
	line := prefix
	for i, p := range parts {
		if i < len(parts)-1 {
			p += ","
		}
		switch {
		case line == prefix:
			line += p
		case len(line)+1+len(p) > width:
			lines = append(lines, line)
			line = p
		default:
			line += " " + p
		}
	}
	return append(lines, line)
}
