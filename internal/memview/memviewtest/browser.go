// Package memviewtest opens memory-viewer pages in headless Chromium for
// tests and benchmarks (through the DevTools protocol, with chromedp).
package memviewtest

import (
	"context"
	"os/exec"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// Chromium returns the path of an installed Chromium or Chrome, or "".
func Chromium() string {
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	return ""
}

// Open opens the page at path in headless Chromium, skipping the test when
// there is none, and waits (up to wait) until the page's script is ready.
// The returned function closes the browser.
func Open(t testing.TB, path string, wait time.Duration) (context.Context, func()) {
	t.Helper()
	exe := Chromium()
	if exe == "" {
		t.Skip("no chromium on PATH: install it (apt-get install -y chromium) to run the browser test of the memory viewer")
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(exe), chromedp.NoSandbox,
		chromedp.WindowSize(1280, 1800), chromedp.Flag("disable-gpu", true))
	actx, cancelA := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelC := chromedp.NewContext(actx)
	ctx, cancelT := context.WithTimeout(ctx, wait+60*time.Second)
	stop := func() { cancelT(); cancelC(); cancelA() }
	err := chromedp.Do(ctx, chromedp.Navigate("file://"+path))
	if err == nil {
		_, err = chromedp.Run(ctx, chromedp.Poll[bool]("window.memview !== undefined && window.memview.ready", chromedp.WithPollingTimeout(wait)))
	}
	if err != nil {
		stop()
		t.Fatalf("opening %s in %s: %v", path, exe, err)
	}
	return ctx, stop
}

// Eval evaluates a JavaScript expression on the page (awaiting a promise)
// and returns its value.
func Eval[T any](t testing.TB, ctx context.Context, expr string) T {
	t.Helper()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](expr, chromedp.EvalAwaitPromise))
	if err != nil {
		t.Fatalf("evaluating %s: %v", expr, err)
	}
	return v
}

// Screenshot returns a PNG of the whole page.
func Screenshot(t testing.TB, ctx context.Context) []byte {
	t.Helper()
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatal(err)
	}
	return png
}
