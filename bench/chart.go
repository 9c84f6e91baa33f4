package bench

import (
	"fmt"
	"image/color"
	"os"
	"path/filepath"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"

	"github.com/headroom-ml/headroom/device"
	"github.com/headroom-ml/headroom/train"
)

// Chart size: 10 × 5 inches at 96 dots per inch.
const (
	chartW, chartH = 10 * vg.Inch, 5 * vg.Inch
	dpi            = 96
)

// palette colours the techniques (plain is black).
func palette(i int) color.Color {
	cs := []color.RGBA{
		{0x4e, 0x79, 0xa7, 255}, {0xf2, 0x8e, 0x2b, 255}, {0xe1, 0x57, 0x59, 255}, {0x76, 0xb7, 0xb2, 255},
		{0x59, 0xa1, 0x4f, 255}, {0xed, 0xc9, 0x48, 255}, {0xb0, 0x7a, 0xa1, 255}, {0xff, 0x9d, 0xa7, 255},
		{0x9c, 0x75, 0x5f, 255}, {0xba, 0xb0, 0xac, 255}, {0x17, 0xbe, 0xcf, 255}, {0x8c, 0x56, 0x4b, 255},
	}
	return cs[i%len(cs)]
}

// tagColor colours the tags.
func tagColor(t device.Tag) color.Color {
	return []color.RGBA{
		{0x4e, 0x79, 0xa7, 255}, {0xf2, 0x8e, 0x2b, 255}, {0x59, 0xa1, 0x4f, 255}, {0xe1, 0x57, 0x59, 255},
		{0xb0, 0x7a, 0xa1, 255}, {0x76, 0xb7, 0xb2, 255}, {0xba, 0xb0, 0xac, 255},
	}[t]
}

// Charts draws two PNG charts per model into dir and returns their paths:
// memory_MODEL.png, the bytes allocated during the measured step against
// time, one line per technique; and peak_MODEL.png, what each tag held when
// memory peaked, one stacked bar per technique.
func (r *Result) Charts(dir string) ([]string, error) {
	var paths []string
	for _, m := range r.Models() {
		rows := r.rows(m)
		mem := filepath.Join(dir, "memory_"+m+".png")
		if err := savePNG(memoryPlot(m, rows), mem); err != nil {
			return paths, err
		}
		peak := filepath.Join(dir, "peak_"+m+".png")
		if err := savePNG(peakPlot(m, rows), peak); err != nil {
			return paths, err
		}
		paths = append(paths, mem, peak)
	}
	return paths, nil
}

// legended is a plot with its legend, drawn beside it in the rightmost
// width.
type legended struct {
	p     *plot.Plot
	l     plot.Legend
	width vg.Length
}

func newLegended(title, x, y string, width vg.Length) *legended {
	p := plot.New()
	p.Title.Text, p.X.Label.Text, p.Y.Label.Text = title, x, y
	p.Add(plotter.NewGrid())
	l := plot.NewLegend()
	l.Top, l.Left = true, true
	l.TextStyle.Font.Size = vg.Points(10)
	return &legended{p: p, l: l, width: width}
}

// memoryPlot draws the allocated bytes of each row's timeline.
func memoryPlot(model string, rows []Row) *legended {
	c := newLegended(fmt.Sprintf("%s: memory during one training step (cpu, rank 0, batch %d)", model, rows[0].Batch),
		"time in the step (ms)", "allocated (MiB)", 3.4*vg.Inch)
	c.p.Y.Min = 0
	for i, row := range rows {
		if row.Timeline == nil || len(row.Timeline.Events) == 0 {
			continue
		}
		l, err := plotter.NewLine(timelineXY(row.Timeline, func(e device.Event) int64 { return e.Allocated }))
		if err != nil {
			continue
		}
		l.StepStyle = plotter.PostStep
		l.Width = vg.Points(1.2)
		l.Color = palette(max(i-1, 0))
		if i == 0 {
			l.Color, l.Width = color.Black, vg.Points(2)
		}
		c.p.Add(l)
		c.l.Add(fmt.Sprintf("%s (%s)", short(row.Technique), device.FormatBytes(row.Peak.Total)), l)
	}
	return c
}

// timelineXY returns (milliseconds, MiB) points of a timeline.
func timelineXY(t *device.Timeline, v func(device.Event) int64) plotter.XYs {
	return timelineXYBy(t, v, false)
}

// timelineXYBy returns (milliseconds or event index, MiB) points.
func timelineXYBy(t *device.Timeline, v func(device.Event) int64, byEvent bool) plotter.XYs {
	xy := make(plotter.XYs, 0, len(t.Events)+1)
	t0 := t.Events[0].T
	for i, e := range t.Events {
		x := float64(e.T-t0) / 1e6
		if byEvent {
			x = float64(i)
		}
		xy = append(xy, plotter.XY{X: x, Y: float64(v(e)) / (1 << 20)})
	}
	return xy
}

// peakPlot stacks, per technique, what each tag held at the peak.
func peakPlot(model string, rows []Row) *legended {
	c := newLegended(fmt.Sprintf("%s: memory at the peak by tag (largest rank, batch %d)", model, rows[0].Batch), "MiB", "", 1.4*vg.Inch)
	var names []string
	for i := len(rows) - 1; i >= 0; i-- { // plain at the top
		names = append(names, short(rows[i].Technique))
	}
	var below *plotter.BarChart
	for _, t := range device.Tags() {
		vals := make(plotter.Values, 0, len(rows))
		any := false
		for i := len(rows) - 1; i >= 0; i-- {
			v := float64(tagOf(rows[i].AtPeak, t)) / (1 << 20)
			any = any || v > 0
			vals = append(vals, v)
		}
		if !any {
			continue
		}
		b, err := plotter.NewBarChart(vals, vg.Points(14))
		if err != nil {
			continue
		}
		b.Horizontal, b.Color, b.LineStyle.Width = true, tagColor(t), 0
		if below != nil {
			b.StackOn(below)
		}
		below = b
		c.p.Add(b)
		c.l.Add(t.String(), b)
	}
	c.p.NominalY(names...)
	c.p.Y.Tick.Label.Font.Size = vg.Points(9)
	return c
}

// short abbreviates a technique's name for a chart.
func short(name string) string {
	return strings.NewReplacer("checkpoint", "ckpt", "accumulate", "accum", "master weights", "master").Replace(name)
}

// tagOf returns one tag's bytes of p.
func tagOf(p train.PeakBytes, t device.Tag) int64 {
	return [...]int64{p.Parameter, p.Gradient, p.Optimizer, p.Activation, p.Workspace, p.Communication, p.Other}[t]
}

// TimelinePNG draws a timeline — the exact bytes allocated and the
// bytes reserved, its peak marked — as a PNG file, against time or, with
// byEvent, against the events' order (better for a meta device, whose
// times measure no arithmetic).
func TimelinePNG(t *device.Timeline, path string, byEvent bool) error {
	if len(t.Events) == 0 {
		return fmt.Errorf("bench: timeline of %s has no events to draw", t.Device)
	}
	peak, at := t.Peak()
	xlabel := "time (ms)"
	if byEvent {
		xlabel = "event"
	}
	c := newLegended(fmt.Sprintf("%s: %d events, peak %s", t.Device, len(t.Events), device.FormatBytes(peak)),
		xlabel, "MiB", 2*vg.Inch)
	c.p.Y.Min = 0
	for i, s := range []struct {
		name string
		v    func(device.Event) int64
	}{{"allocated (exact)", func(e device.Event) int64 { return e.Allocated }}, {"reserved", func(e device.Event) int64 { return e.Reserved }}} {
		l, err := plotter.NewLine(timelineXYBy(t, s.v, byEvent))
		if err != nil {
			return fmt.Errorf("bench: drawing timeline: %w", err)
		}
		l.StepStyle, l.Color, l.Width = plotter.PostStep, palette(i), vg.Points(1.5)
		c.p.Add(l)
		c.l.Add(s.name, l)
	}
	px := float64(t.Events[at].T-t.Events[0].T) / 1e6
	if byEvent {
		px = float64(at)
	}
	pt, err := plotter.NewScatter(plotter.XYs{{X: px, Y: float64(peak) / (1 << 20)}})
	if err == nil {
		pt.Color, pt.Radius = palette(2), vg.Points(4)
		c.p.Add(pt)
		c.l.Add(fmt.Sprintf("peak at event %d", at), pt)
	}
	return savePNG(c, path)
}

// savePNG renders the plot with its legend on the right.
func savePNG(c *legended, path string) error {
	img := vgimg.NewWith(vgimg.UseWH(chartW, chartH), vgimg.UseDPI(dpi))
	dc := draw.New(img)
	c.p.Draw(draw.Crop(dc, vg.Points(4), -c.width, 0, 0))
	c.l.Draw(draw.Crop(dc, chartW-c.width+vg.Points(8), 0, 0, -vg.Points(30)))
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("bench: %w", err)
	}
	_, err = vgimg.PngCanvas{Canvas: img}.WriteTo(f)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("bench: writing %s: %w", path, err)
	}
	return nil
}
