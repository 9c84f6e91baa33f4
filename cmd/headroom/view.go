package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"

	"github.com/headroom-ml/headroom/device"
	"github.com/headroom-ml/headroom/train"
)

const viewSynopsis = `view FILE [FILE2] [-o OUT.html] [--open]

Writes one self-contained HTML page (no network: script, styles and data
inline) showing a memory timeline: memory over time by tag with the step
phases and the peak, the live blocks at any instant by tag and creator,
the allocator's segments, OOM events; with FILE2, the two runs side by
side aligned by step phase with the difference per tag at the peak. FILE
is a timeline JSON: an example's --mem-view records one directly (as
HTML), 'headroom plan --timeline FILE' writes one for a planner run, and
device.Timeline.WriteJSON does from the library. A run report (--report)
or a bench.json holds statistics but no events, so it is refused with what
to run instead. Prints the page's path.`

func cmdView(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("view")
	out := fs.String("o", "", "the page to write (default: FILE with the extension .html)")
	open := fs.Bool("open", false, "open the page in the system browser when there is one")
	pos, err := parse(fs, viewSynopsis, args, stdout)
	if err != nil {
		return err
	}
	if len(pos) < 1 || len(pos) > 2 {
		return train.Usagef("want FILE or FILE FILE2, got %d arguments %q", len(pos), pos)
	}
	tls := make([]*device.Timeline, len(pos))
	for i, p := range pos {
		if tls[i], err = readViewTimeline(p); err != nil {
			return err
		}
	}
	if *out == "" {
		*out = strings.TrimSuffix(pos[0], filepath.Ext(pos[0])) + ".html"
	}
	if err := writeView(*out, pos, tls); err != nil {
		return err
	}
	fmt.Fprintln(stdout, *out)
	if *open {
		openBrowser(*out, stderr)
	}
	return nil
}

// readViewTimeline reads a timeline JSON, refusing the other files headroom
// writes with what to run instead.
func readViewTimeline(path string) (*device.Timeline, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var keys map[string]json.RawMessage
	if err := json.Unmarshal(data, &keys); err != nil {
		return nil, train.Usagef("%s is not a JSON object: %v", path, err)
	}
	if _, ok := keys["events"]; ok {
		tl, err := device.ReadTimeline(bytes.NewReader(data))
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		return tl, nil
	}
	_, report := keys["peak_bytes"]
	_, rows := keys["rows"]
	switch {
	case report:
		return nil, train.Usagef("%s is a run report: it holds statistics, not events; rerun the example with --mem-view OUT.html (or 'headroom summary %s')", path, path)
	case rows:
		return nil, train.Usagef("%s is a bench.json: it keeps no events; 'headroom summary %s --png' charts its rows, 'headroom plan ... --timeline FILE' records a step to view", path, path)
	}
	return nil, train.Usagef("%s is not a memory timeline (no \"events\")", path)
}

// writeView writes the page of one timeline or two, atomically.
func writeView(out string, names []string, tls []*device.Timeline) error {
	return train.WriteAtomic(out, func(w io.Writer) error {
		if len(tls) == 2 {
			return device.WriteHTMLCompare(w, tls[0], tls[1], filepath.Base(names[0]), filepath.Base(names[1]))
		}
		return tls[0].WriteHTML(w)
	})
}

// openBrowser starts the system's opener on path, saying so when there is none.
func openBrowser(path string, stderr io.Writer) {
	name := "xdg-open"
	if runtime.GOOS == "darwin" {
		name = "open"
	}
	exe, err := exec.LookPath(name)
	if err != nil {
		fmt.Fprintf(stderr, "headroom view: --open: no %s here; open %s in a browser\n", name, path)
		return
	}
	if err := exec.Command(exe, path).Start(); err != nil {
		fmt.Fprintf(stderr, "headroom view: --open: %v\n", err)
	}
}
