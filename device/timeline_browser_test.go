package device_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/headroom-ml/headroom/device"
)

// chromium returns the path of an installed Chromium or Chrome, or "".
func chromium() string {
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	return ""
}

// browse opens the page at path in headless Chromium, skipping the test
// when there is none, and waits until the page's script is ready.
func browse(t testing.TB, path string) (context.Context, func()) {
	t.Helper()
	exe := chromium()
	if exe == "" {
		t.Skip("no chromium on PATH: install it (apt-get install -y chromium) to run the browser test of the memory viewer")
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(exe), chromedp.NoSandbox,
		chromedp.WindowSize(1280, 1800), chromedp.Flag("disable-gpu", true))
	actx, cancelA := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelC := chromedp.NewContext(actx)
	ctx, cancelT := context.WithTimeout(ctx, 120*time.Second)
	stop := func() { cancelT(); cancelC(); cancelA() }
	err := chromedp.Do(ctx, chromedp.Navigate("file://"+path))
	if err == nil {
		_, err = chromedp.Run(ctx, chromedp.Poll[bool]("window.memview !== undefined && window.memview.ready", chromedp.WithPollingTimeout(100*time.Second)))
	}
	if err != nil {
		stop()
		t.Fatalf("opening %s in %s: %v", path, exe, err)
	}
	return ctx, stop
}

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
// AtPeak and its total against the timeline's peak; it saves a screenshot
// (path in the log).
func TestViewerInBrowser(t *testing.T) {
	tl, st := simulate(t, 1000, 3, 5000)
	ctx, stop := browse(t, writePage(t, t.TempDir(), tl))
	defer stop()
	if err := chromedp.Do(ctx, chromedp.Click("#peak"), chromedp.WaitVisible("#tags0")); err != nil {
		t.Fatal(err)
	}
	rows, err := chromedp.Run(ctx, chromedp.Evaluate[map[string]string](fmt.Sprintf(tableJS, "tags0")))
	if err != nil {
		t.Fatal(err)
	}
	shot, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatal(err)
	}
	for _, tag := range device.Tags() {
		if got := rows[tag.String()]; got != strconv.FormatInt(st.AtPeak[tag], 10) {
			t.Errorf("page at peak: %s %q bytes, allocator AtPeak %d", tag, got, st.AtPeak[tag])
		}
	}
	if peak, _ := tl.Peak(); rows["total"] != strconv.FormatInt(peak, 10) {
		t.Errorf("page at peak: total %q, timeline peak %d", rows["total"], peak)
	}
	saveShot(t, "headroom-view.png", shot)
}

// saveShot writes a screenshot to the temporary directory and logs its path.
func saveShot(t testing.TB, name string, png []byte) {
	path := filepath.Join(os.TempDir(), name)
	if err := os.WriteFile(path, png, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot: %s", path)
}
