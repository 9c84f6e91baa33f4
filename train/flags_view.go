package train

import (
	"flag"
	"fmt"
	"io"
	"path/filepath"

	"github.com/headroom-ml/headroom/device"
)

// View is the --mem-view flag: the run's whole memory timeline written at
// the end as the HTML memory viewer (device.Timeline.WriteHTML).
type View struct {
	MemView string
}

// registerView adds --mem-view to fs.
func (v *View) registerView(fs *flag.FlagSet) {
	fs.StringVar(&v.MemView, "mem-view", "", "record every allocation of the run and write the interactive memory viewer (one HTML file) here at the end (--report then names it, for headroom view REPORT); the recording holds one 136-byte device.Event per allocation, free and retag in host memory until the end")
}

// startView starts recording dev's timeline when --mem-view asks and returns
// the function that stops it and writes the page (printing its path to
// out). Without the flag both do nothing.
func (v *View) startView(dev *device.Device, out io.Writer) func() error {
	if v.MemView == "" {
		return func() error { return nil }
	}
	dev.StartTimeline()
	return func() error {
		tl := dev.StopTimeline()
		if err := WriteAtomic(v.MemView, tl.WriteHTML); err != nil {
			return fmt.Errorf("--mem-view: %w", err)
		}
		fmt.Fprintln(out, "memory view", v.MemView)
		return nil
	}
}

// checkView refuses --mem-view for runs over several devices: it records
// one device's timeline.
func (c *Common) checkView() error {
	if c.MemView != "" && (c.Parallel() || c.TP > 1 || c.PP > 1) {
		return fmt.Errorf("--mem-view %s: records a run on one device; not available with --ranks, --tp or --pp yet", c.MemView)
	}
	return nil
}

// viewFromReport is --mem-view's page as the report names it: relative to
// --report's folder (absolute when no relative path leads there); "" when
// no page was asked for.
func (c *Common) viewFromReport() string {
	if c.MemView == "" {
		return ""
	}
	page, err := filepath.Abs(c.MemView)
	if err != nil {
		return c.MemView
	}
	dir, err := filepath.Abs(filepath.Dir(c.Report))
	if err != nil {
		return page
	}
	if rel, err := filepath.Rel(dir, page); err == nil {
		return rel
	}
	return page
}
