package device_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/headroom-ml/headroom/device"
	"github.com/headroom-ml/headroom/device/meta"
	"github.com/headroom-ml/headroom/internal/memview/memviewtest"
)

// writePage writes the page of the timelines (two: the compare page) to dir.
func writePage(t testing.TB, dir string, tls ...*device.Timeline) string {
	t.Helper()
	path := filepath.Join(dir, "view.html")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if len(tls) == 2 {
		err = device.WriteHTMLCompare(f, tls[0], tls[1], "plain", "other")
	} else {
		err = tls[0].WriteHTML(f)
	}
	if err != nil {
		t.Fatal(err)
	}
	return path
}

// tableJS reads a table's rows as tag → bytes.
const tableJS = `Object.fromEntries([...document.querySelectorAll('#%s tr[data-tag]')].map(r => [r.dataset.tag, r.dataset.bytes]))`

// TestViewerInBrowser opens the page in headless Chromium, clicks the peak
// button, and checks the table's bytes per tag against the allocator's
// AtPeak and its total against the timeline's peak, for 1k events and (not
// with -short, -race or noasm: fullScale) 1M; it saves a screenshot of
// each (paths in the log).
func TestViewerInBrowser(t *testing.T) {
	sizes := []int{1000, 1000000}
	if testing.Short() || !fullScale {
		sizes = sizes[:1]
	}
	for _, n := range sizes {
		tl, st := simulate(t, n, 3, 5000)
		ctx, stop := memviewtest.Open(t, writePage(t, t.TempDir(), tl), 60*time.Second)
		if err := chromedp.Do(ctx, chromedp.Click("#peak"), chromedp.WaitVisible("#tags0")); err != nil {
			stop()
			t.Fatal(err)
		}
		rows := memviewtest.Eval[map[string]string](t, ctx, fmt.Sprintf(tableJS, "tags0"))
		for _, tag := range device.Tags() {
			if got := rows[tag.String()]; got != strconv.FormatInt(st.AtPeak[tag], 10) {
				t.Errorf("%d events: page at peak: %s %q bytes, allocator AtPeak %d", n, tag, got, st.AtPeak[tag])
			}
		}
		if peak, _ := tl.Peak(); rows["total"] != strconv.FormatInt(peak, 10) {
			t.Errorf("%d events: page at peak: total %q, timeline peak %d", n, rows["total"], peak)
		}
		saveShot(t, fmt.Sprintf("headroom-view-%d.png", n), memviewtest.Screenshot(t, ctx))
		stop()
	}
}

// saveShot writes a screenshot to the temporary directory and logs its path.
func saveShot(t testing.TB, name string, png []byte) {
	path := filepath.Join(os.TempDir(), name)
	if err := os.WriteFile(path, png, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot: %s", path)
}

// diffJS reads the compare page's difference table as tag → [a, b] bytes.
const diffJS = `Object.fromEntries([...document.querySelectorAll('#difftable tr[data-tag]')].map(r => [r.dataset.tag, [r.dataset.a, r.dataset.b]]))`

// TestViewerCompareInBrowser: the compare page's difference table at the
// peaks holds each run's AtPeak per tag; an OOM of the second run shows
// with its *OOMError text.
func TestViewerCompareInBrowser(t *testing.T) {
	a, sa := simulate(t, 2000, 11, 0)
	b, sb := simulate(t, 1000, 12, 0)
	oomText := appendOOM(t, b)
	ctx, stop := memviewtest.Open(t, writePage(t, t.TempDir(), a, b), 30*time.Second)
	defer stop()
	rows := memviewtest.Eval[map[string][2]string](t, ctx, diffJS)
	for _, tag := range device.Tags() {
		want := [2]string{strconv.FormatInt(sa.AtPeak[tag], 10), strconv.FormatInt(sb.AtPeak[tag], 10)}
		if rows[tag.String()] != want {
			t.Errorf("difference at the peaks: %s %v, allocators' AtPeak %v", tag, rows[tag.String()], want)
		}
	}
	if got := memviewtest.Eval[string](t, ctx, `document.querySelector('pre.oom').textContent`); !strings.Contains(got, oomText) {
		t.Errorf("OOM shown as %q, want it to contain %q", got, oomText)
	}
	saveShot(t, "headroom-view-compare.png", memviewtest.Screenshot(t, ctx))
}

// appendOOM appends to tl the events of a device whose allocation fails
// with an injected OOM, returning the error's first line less the device name.
func appendOOM(t *testing.T, tl *device.Timeline) string {
	t.Helper()
	d := meta.New(0, device.Options{})
	d.StartTimeline()
	d.InjectOOM(1)
	_, err := d.Alloc(1<<20, device.Label{Tag: device.Activation, Op: "matmul", Phase: "forward"})
	if err == nil {
		t.Fatal("the injected OOM did not happen")
	}
	ev := d.StopTimeline().Events
	last := tl.Events[len(tl.Events)-1]
	for _, e := range ev {
		e.Seq, e.T = len(tl.Events), last.T+1
		e.Allocated, e.Reserved = last.Allocated, last.Reserved
		tl.Events = append(tl.Events, e)
	}
	return strings.TrimPrefix(strings.SplitN(err.Error(), "\n", 2)[0], d.Name()+": ")
}
