package run_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/headroom-ml/headroom/train/traintest"
)

// TestMemView: --mem-view writes the memory viewer of the run, printing its
// path, and --report names it; the parameters allocated before the first
// step are in its base.
func TestMemView(t *testing.T) {
	dir := t.TempDir()
	page, rep := filepath.Join(dir, "mem.html"), filepath.Join(dir, "r.json")
	out := mainOK(t, "--steps", "1", "--mem-view", page, "--report", rep)
	if !strings.Contains(out, "memory view "+page) {
		t.Errorf("output does not name the page:\n%s", out)
	}
	if got := traintest.ReadReport(t, rep)["mem_view"]; got != "mem.html" {
		t.Errorf("the report's mem_view is %v, want mem.html", got)
	}
	data, err := os.ReadFile(page)
	if err != nil {
		t.Fatal(err)
	}
	s := string(data)
	const open = `<script type="application/json" id="runs">`
	i := strings.Index(s, open)
	j := strings.Index(s[max(i, 0):], "</script>")
	if i < 0 || j < 0 {
		t.Fatalf("the page has no run header")
	}
	var runs []struct {
		N         int      `json:"n"`
		BaseByTag [7]int64 `json:"baseByTag"`
	}
	if err := json.Unmarshal([]byte(s[i+len(open):i+j]), &runs); err != nil {
		t.Fatal(err)
	}
	if len(runs) != 1 || runs[0].N < 100 || runs[0].BaseByTag[0] <= 0 {
		t.Errorf("page header %+v: want one run of ≥ 100 events with parameters before the recording", runs)
	}
}
