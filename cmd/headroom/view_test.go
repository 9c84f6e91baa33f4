package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/headroom-ml/headroom/device"
	"github.com/headroom-ml/headroom/device/meta"
	"github.com/headroom-ml/headroom/train"
)

// viewTimeline records a few allocations on a meta device and saves the
// timeline as JSON in dir; big adds a larger activation.
func viewTimeline(t *testing.T, dir, name string, big int64) string {
	t.Helper()
	d := meta.New(0, device.Options{})
	d.StartTimeline()
	p := d.MustAlloc(4096, device.Label{Tag: device.Parameter, Op: "init"})
	a := d.MustAlloc(big, device.Label{Tag: device.Activation, Op: "matmul", Phase: "forward"})
	g := d.MustAlloc(4096, device.Label{Tag: device.Gradient, Op: "matmul_backward", Phase: "backward"})
	a.Release()
	g.Release()
	p.Release()
	path := filepath.Join(dir, name)
	if err := writeTimeline(path, d.StopTimeline()); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestView: one timeline and two compared become pages at the printed
// path; a run report is refused with what to run instead.
func TestView(t *testing.T) {
	dir := t.TempDir()
	a, b := viewTimeline(t, dir, "plain.json", 1<<20), viewTimeline(t, dir, "ckpt.json", 1<<18)
	out := ok(t, "view", a)
	want := filepath.Join(dir, "plain.html")
	if strings.TrimSpace(out) != want {
		t.Errorf("view printed %q, want %q", out, want)
	}
	page := filepath.Join(dir, "pair.html")
	ok(t, "view", a, b, "-o", page)
	data, err := os.ReadFile(page)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(data), `id="data1"`) {
		t.Errorf("the compare page lacks the second run's data")
	}
	rep := filepath.Join(dir, "report.json")
	if err := os.WriteFile(rep, []byte(`{"peak_bytes": {}, "stats": {}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, errs := call("view", rep)
	if code != train.ExitUsage || !strings.Contains(errs, "--mem-view") {
		t.Errorf("view of a report: exit %d, %q; want %d and advice naming --mem-view", code, errs, train.ExitUsage)
	}
}
