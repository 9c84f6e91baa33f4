package main

import (
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/headroom-ml/headroom/bench"
	"github.com/headroom-ml/headroom/device"
	"github.com/headroom-ml/headroom/train"
)

// readWith reads the file at path with read.
func readWith[T any](t *testing.T, path string, read func(io.Reader) (T, error)) T {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	v, err := read(f)
	if err != nil {
		t.Fatalf("reading %s: %v", path, err)
	}
	return v
}

// pageTimelines reads the timelines back from a page headroom view wrote.
func pageTimelines(t *testing.T, page string) []*device.Timeline {
	return readWith(t, page, device.ReadHTML)
}

// readJSONTimeline reads a timeline JSON.
func readJSONTimeline(t *testing.T, path string) *device.Timeline {
	return readWith(t, path, device.ReadTimeline)
}

// savePage writes tl's page to path.
func savePage(t *testing.T, path string, tl *device.Timeline) {
	t.Helper()
	if err := train.WriteAtomic(path, tl.WriteHTML); err != nil {
		t.Fatal(err)
	}
}

// TestViewReport: a run report naming its --mem-view page (relative to the
// report's folder) is viewed against a timeline JSON with the page's
// events; a compare page is refused (it holds two runs), and so is a report
// without a page, with the flags to rerun with.
func TestViewReport(t *testing.T) {
	dir := t.TempDir()
	tl := readJSONTimeline(t, viewTimeline(t, dir, "plain.json", 1<<20))
	other := viewTimeline(t, dir, "ckpt.json", 1<<18)
	if err := os.Mkdir(filepath.Join(dir, "runs"), 0o755); err != nil {
		t.Fatal(err)
	}
	savePage(t, filepath.Join(dir, "runs", "mem.html"), tl)
	rep := filepath.Join(dir, "runs", "report.json")
	if err := (&train.Report{MemView: "mem.html"}).Write(rep); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "out.html")
	ok(t, "view", rep, other, "-o", out)
	got := pageTimelines(t, out)
	if len(got) != 2 || !reflect.DeepEqual(got[0], tl) || !reflect.DeepEqual(got[1], readJSONTimeline(t, other)) {
		t.Errorf("view REPORT TIMELINE: the page holds %d runs differing from the report's page and the timeline", len(got))
	}
	if code, _, errs := call("view", out); code != train.ExitUsage || !strings.Contains(errs, "compare page of 2 runs") {
		t.Errorf("view of a compare page: exit %d, %q; want %d and 'compare page of 2 runs'", code, errs, train.ExitUsage)
	}
	if err := (&train.Report{}).Write(rep); err != nil {
		t.Fatal(err)
	}
	code, _, errs := call("view", rep)
	if code != train.ExitUsage || !strings.Contains(errs, "--mem-view RUN.html --report "+rep) {
		t.Errorf("view of a report without a page: exit %d, %q; want %d and the flags to rerun with", code, errs, train.ExitUsage)
	}
}

// TestViewBench: a bench.json row, FILE#MODEL/TECHNIQUE, is viewed with
// its page's events; the file alone lists its rows, and a row without a
// page says to rerun the bench.
func TestViewBench(t *testing.T) {
	dir := t.TempDir()
	a := readJSONTimeline(t, viewTimeline(t, dir, "a.json", 1<<20))
	b := readJSONTimeline(t, viewTimeline(t, dir, "b.json", 1<<18))
	res := &bench.Result{Mode: "tiny", Rows: []bench.Row{
		{Model: "transformer", Technique: "plain", Timeline: a},
		{Model: "transformer", Technique: "checkpoint", Timeline: b},
		{Model: "resnet", Technique: "plain"},
	}}
	if _, err := res.Write(dir); err != nil {
		t.Fatal(err)
	}
	js := filepath.Join(dir, "bench.json")
	out := filepath.Join(dir, "pair.html")
	ok(t, "view", js+"#transformer/plain", js+"#transformer/checkpoint", "-o", out)
	got := pageTimelines(t, out)
	if len(got) != 2 || !reflect.DeepEqual(got[0], a) || !reflect.DeepEqual(got[1], b) {
		t.Errorf("view of two bench rows: the page's runs differ from the rows' timelines")
	}
	for _, c := range []struct{ arg, want string }{
		{js, "name one as " + js + "#MODEL/TECHNIQUE (rows: transformer/plain, transformer/checkpoint, resnet/plain)"},
		{js + "#resnet/plain", "row resnet/plain has no memory page"},
		{js + "#resnet/zero", `has no row "resnet/zero"`},
	} {
		if code, _, errs := call("view", c.arg); code != train.ExitUsage || !strings.Contains(errs, c.want) {
			t.Errorf("view %s: exit %d, %q; want %d and %q", c.arg, code, errs, train.ExitUsage, c.want)
		}
	}
}

// TestViewPlan: a planner run (plan --json --timeline) names its timeline,
// which view reads; without --timeline it says to rerun with it.
func TestViewPlan(t *testing.T) {
	dir := t.TempDir()
	step := filepath.Join(dir, "step.json")
	args := []string{"plan", "--model", "transformer", "--batch", "2", "--seq", "8", "--json"}
	js := filepath.Join(dir, "plan.json")
	if err := os.WriteFile(js, []byte(ok(t, append(args, "--timeline", step)...)), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "plan.html")
	ok(t, "view", js, "-o", out)
	if got := pageTimelines(t, out); len(got) != 1 || !reflect.DeepEqual(got[0], readJSONTimeline(t, step)) {
		t.Errorf("view of a planner run: the page's run differs from its --timeline")
	}
	if err := os.WriteFile(js, []byte(ok(t, args...)), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, _, errs := call("view", js); code != train.ExitUsage || !strings.Contains(errs, "--timeline STEP.json") {
		t.Errorf("view of a planner run without a timeline: exit %d, %q; want %d and --timeline", code, errs, train.ExitUsage)
	}
}

// TestViewNamedFileMustHoldEvents: a report naming another report (here
// itself) is refused, not followed.
func TestViewNamedFileMustHoldEvents(t *testing.T) {
	rep := filepath.Join(t.TempDir(), "r.json")
	if err := (&train.Report{MemView: "r.json"}).Write(rep); err != nil {
		t.Fatal(err)
	}
	code, _, errs := call("view", rep)
	if code != train.ExitUsage || !strings.Contains(errs, "is neither a memory page nor a timeline JSON") {
		t.Errorf("view of a report naming itself: exit %d, %q; want a refusal", code, errs)
	}
}
