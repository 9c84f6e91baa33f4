package device

import (
	"fmt"
	"strings"
)

// Unsaved returns the live activation blocks that no reference saves
// (Block.RetainSaved: autograd's tensors saved for backward), grouped by
// creator, largest first. During a step these are activations that the
// graph will never read again — an op's output that the next op did not
// save (a Linear's output under a ReLU, which saves its own output) — and
// that live on only because a handle or the step's scope holds them: what
// releasing them sooner (or an in-place op) would give back. The step's
// input and its loss appear here too while they are held. After backward
// every activation is unsaved until the scope is released.
func (d *Device) Unsaved() []LiveGroup {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.unsaved()
}

// unsaved is Unsaved for a caller that holds d.mu.
func (d *Device) unsaved() []LiveGroup {
	return d.liveGroupsOf(func(b *Block) bool { return b.label.Tag == Activation && b.saved.Load() == 0 })
}

// unsavedReport renders Unsaved's groups for the OOM report and the
// Summary: a total, then the largest groups (at most five), each line
// preceded by lead; "" when there are none.
func unsavedReport(gs []LiveGroup, lead string) string {
	if len(gs) == 0 {
		return ""
	}
	var total int64
	blocks := 0
	for _, g := range gs {
		total += g.Bytes
		blocks += g.Blocks
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%sactivation held only by the scope (saved by no node): %s in %d block(s); Release it after its last use, or use an in-place op",
		lead, FormatBytes(total), blocks)
	for i, g := range gs {
		if i == 5 {
			fmt.Fprintf(&b, "%s  … and %d more creator(s)", lead, len(gs)-5)
			break
		}
		fmt.Fprintf(&b, "%s  unsaved: %10s in %d block(s) from %s", lead, FormatBytes(g.Bytes), g.Blocks, g.Creator)
	}
	return b.String()
}

// unsavedSummary is the Summary's part of the report: its lines, each
// ended by a newline.
func (d *Device) unsavedSummary() string {
	if r := unsavedReport(d.Unsaved(), "\n"); r != "" {
		return r[1:] + "\n"
	}
	return ""
}
