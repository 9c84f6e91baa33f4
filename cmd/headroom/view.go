package main

import (
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"github.com/headroom-ml/headroom/device"
	"github.com/headroom-ml/headroom/train"
)

const viewSynopsis = `view FILE [FILE2] [-o OUT.html] [--open]

Writes one self-contained HTML page (no network: script, styles and data
inline) showing a memory timeline: memory over time by tag with the step
phases and the peak, the live blocks at any instant by tag and creator,
the allocator's segments, OOM events; with FILE2, the two runs side by
side aligned by step phase (forward, backward, optimizer of step i
matched by name) with the difference per tag at the peak. FILE is a
timeline JSON ('headroom plan --timeline FILE', or
device.Timeline.WriteJSON from the library); a memory page (an example's
--mem-view, a bench row's view-*.html); a run report (--report) of a run
with --mem-view, or a planner run ('headroom plan --json --timeline F'),
both of which name the file holding the events; or one row of a
bench.json, bench.json#MODEL/TECHNIQUE. A file that names no events is
refused with what to rerun. Prints the page's path.`

func cmdView(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("view")
	out := fs.String("o", "", "the page to write (default: FILE with the extension .html)")
	open := fs.Bool("open", false, "open the page in the browser: $BROWSER's first command found (%s: the page), else xdg-open (open on macOS); says so when there is none")
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

// writeView writes the page of one timeline or two, atomically.
func writeView(out string, names []string, tls []*device.Timeline) error {
	return train.WriteAtomic(out, func(w io.Writer) error {
		if len(tls) == 2 {
			return device.WriteHTMLCompare(w, tls[0], tls[1], filepath.Base(names[0]), filepath.Base(names[1]))
		}
		return tls[0].WriteHTML(w)
	})
}
