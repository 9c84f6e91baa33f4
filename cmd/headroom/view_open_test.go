package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// stubBrowser writes an executable script name into dir that records its
// arguments in dir/NAME.args and exits with status code.
func stubBrowser(t *testing.T, dir, name, code string) string {
	t.Helper()
	rec := filepath.Join(dir, name+".args")
	script := "#!/bin/sh\necho \"$@\" > '" + rec + "'\nexit " + code + "\n"
	if err := os.WriteFile(filepath.Join(dir, name), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return rec
}

// recorded is what a stub recorded ("" when it did not run).
func recorded(rec string) string {
	b, _ := os.ReadFile(rec)
	return strings.TrimSpace(string(b))
}

// TestViewOpen: --open starts $BROWSER's first command found (with %s as
// the page, or the page appended), else the system opener, with the page
// written; with neither, or an opener that fails, it says so and still
// exits 0 with the page's path printed.
func TestViewOpen(t *testing.T) {
	dir := t.TempDir()
	tl := viewTimeline(t, dir, "run.json", 1<<20)
	page := filepath.Join(dir, "run.html")
	bin := filepath.Join(dir, "bin")
	if err := os.Mkdir(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin)

	t.Setenv("BROWSER", "")
	code, _, errs := call("view", tl, "--open")
	if code != 0 || !strings.Contains(errs, "no browser found (set $BROWSER, or install "+opener()+"); open "+page) {
		t.Errorf("--open without a browser: exit %d, %q; want 0 and a message naming $BROWSER and %s", code, errs, opener())
	}

	sys := stubBrowser(t, bin, opener(), "0")
	if out := ok(t, "view", tl, "--open"); strings.TrimSpace(out) != page || recorded(sys) != page {
		t.Errorf("--open: printed %q, %s got %q; want %q for both", out, opener(), recorded(sys), page)
	}

	mine := stubBrowser(t, bin, "mybrowser", "0")
	os.Remove(sys)
	t.Setenv("BROWSER", "nosuch:mybrowser --new-window %s")
	ok(t, "view", tl, "--open")
	if got := recorded(mine); got != "--new-window "+page || recorded(sys) != "" {
		t.Errorf("--open with $BROWSER: mybrowser got %q, %s %q; want %q and nothing", got, opener(), recorded(sys), "--new-window "+page)
	}

	stubBrowser(t, bin, "badbrowser", "3")
	t.Setenv("BROWSER", "badbrowser")
	if code, _, errs := call("view", tl, "--open"); code != 0 || !strings.Contains(errs, "exit status 3; open "+page+" in a browser") {
		t.Errorf("--open with a failing browser: exit %d, %q; want 0 and its exit status", code, errs)
	}
}
