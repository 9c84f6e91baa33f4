package device_test

import (
	"strings"
	"testing"

	"github.com/headroom-ml/headroom/device"
	"github.com/headroom-ml/headroom/device/meta"
)

const summaryWidth = 77

// summaryRows splits a Summary into its table rows: the name and the cells
// of every line that has cells.
func summaryRows(s string) [][]string {
	var rows [][]string
	for _, line := range strings.Split(strings.TrimSuffix(s, "\n"), "\n") {
		parts := strings.Split(line, "|")
		if len(parts) != 7 { // "", name, 4 cells, ""
			continue
		}
		var row []string
		for _, p := range parts[1:6] {
			row = append(row, strings.TrimSpace(p))
		}
		rows = append(rows, row)
	}
	return rows
}

// findRow returns the cells of the first row named name after the row
// named after (or from the top when after is "").
func findRow(t *testing.T, rows [][]string, after, name string) []string {
	t.Helper()
	started := after == ""
	for _, r := range rows {
		if !started {
			started = r[0] == after
			continue
		}
		if r[0] == name {
			return r[1:]
		}
	}
	t.Fatalf("no row %q after %q", name, after)
	return nil
}

func checkWidth(t *testing.T, s string) {
	t.Helper()
	if i := strings.LastIndex(s, "|\n"); i >= 0 {
		s = s[:i+2] // the table, without the unsaved activations below it
	}
	for i, line := range strings.Split(strings.TrimSuffix(s, "\n"), "\n") {
		if len(line) != summaryWidth || line[0] != '|' || line[len(line)-1] != '|' {
			t.Errorf("line %d is %d bytes wide, want %d framed by '|':\n%s", i, len(line), summaryWidth, line)
		}
	}
}

func TestSummary(t *testing.T) {
	d := meta.New(0, device.Options{Capacity: 64 * mib})
	p := mustAlloc(t, d, 3*mib, device.Parameter, "w")   // 20 MiB segment
	a := mustAlloc(t, d, 1536, device.Activation, "act") // small segment
	w := mustAlloc(t, d, 1000, device.Workspace, "ws")
	w.Release()
	s := d.Summary()
	t.Logf("\n%s", s)
	checkWidth(t, s)
	for _, want := range []string{
		"headroom memory summary, device meta:0",
		"capacity: 64.00 MiB   OOMs: 0   cache flushes: 0",
		"at peak: parameter 3.0 MiB, activation 1.5 KiB, workspace 1000 B",
	} {
		if !strings.Contains(s, want) {
			t.Errorf("Summary lacks %q", want)
		}
	}
	rows := summaryRows(s)
	tests := []struct {
		after, name string
		want        [4]string
	}{
		{"", "Metric", [4]string{"Cur Usage", "Peak Usage", "Tot Alloc", "Tot Freed"}},
		{"", "Requested memory", [4]string{"3.0 MiB", "3.0 MiB", "3.0 MiB", "1000 B"}},
		{"Requested memory", "parameter", [4]string{"3.0 MiB", "3.0 MiB", "3.0 MiB", "0 B"}},
		{"Requested memory", "activation", [4]string{"1.5 KiB", "1.5 KiB", "1.5 KiB", "0 B"}},
		{"Requested memory", "workspace", [4]string{"0 B", "1000 B", "1000 B", "1000 B"}},
		{"Requested memory", "other", [4]string{"0 B", "0 B", "0 B", "0 B"}},
		{"", "Allocated memory", [4]string{"3.0 MiB", "3.0 MiB", "3.0 MiB", "1.0 KiB"}},
		{"", "Reserved memory", [4]string{"22.0 MiB", "22.0 MiB", "22.0 MiB", "0 B"}},
		{"", "Cached free memory", [4]string{"19.0 MiB", "-", "-", "-"}},
		{"", "Largest free block", [4]string{"17.0 MiB", "-", "-", "-"}},
		{"", "Allocations", [4]string{"2", "-", "3", "1"}},
		{"Allocations", "parameter", [4]string{"1", "-", "1", "0"}},
		{"Allocations", "workspace", [4]string{"0", "-", "1", "1"}},
		{"", "Reserved segments", [4]string{"2", "-", "2", "0"}},
	}
	for _, tt := range tests {
		got := findRow(t, rows, tt.after, tt.name)
		if [4]string(got) != tt.want {
			t.Errorf("row %q = %q, want %q", tt.name, got, tt.want)
		}
	}
	// The exact numbers behind the compact cells.
	st := d.Stats()
	if st.Requested.Current != 3*mib+1536 || st.Allocated.Current != 3*mib+1536 ||
		st.CachedFree() != 22*mib-3*mib-1536 || st.LargestFree != 17*mib {
		t.Errorf("stats behind the summary: %+v", st)
	}
	// Below the table: the activation no graph node saves (this raw
	// block), which a Stats snapshot does not know.
	note := "activation held only by the scope (saved by no node): 1.50 KiB in 1 block(s)"
	if !strings.HasPrefix(s, st.Summary()) || !strings.Contains(s[len(st.Summary()):], note) || !strings.Contains(s, "unsaved:   1.50 KiB in 1 block(s) from act\n") {
		t.Errorf("Device.Summary is not Stats().Summary() followed by the unsaved activations:\n%s", s)
	}
	p.Release()
	a.Release()
}

// TestSummaryWidth: the table keeps its width whatever the numbers, and a
// long at-peak line wraps.
func TestSummaryWidth(t *testing.T) {
	d := meta.New(12, device.Options{})
	var bs []*device.Block
	for i, tg := range device.Tags() {
		bs = append(bs, mustAlloc(t, d, int64(i+1)*999*mib+12345, tg, "x"))
	}
	s := d.Summary()
	t.Logf("\n%s", s)
	checkWidth(t, s)
	for _, tg := range device.Tags() {
		if !strings.Contains(s, tg.String()+" ") {
			t.Errorf("summary lacks tag %s", tg)
		}
	}
	if !strings.Contains(s, "other 6.8 GiB") || !strings.Contains(s, "at peak: parameter 999 MiB,") {
		t.Errorf("at-peak lines incomplete")
	}
	for _, b := range bs {
		b.Release()
	}
	empty := meta.New(0, device.Options{}).Summary()
	checkWidth(t, empty)
	if !strings.Contains(empty, "at peak: nothing") || !strings.Contains(empty, "capacity: unlimited") {
		t.Errorf("empty summary:\n%s", empty)
	}
}
