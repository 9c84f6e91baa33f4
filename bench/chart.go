package bench

import (
	"fmt"
	"image/color"
	"math"
	"os"
	"path/filepath"
	"strconv"
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
// memory_MODEL.png, small multiples of the bytes allocated during the
// measured step against time, one panel per technique with plain's line
// in grey behind it, on the same axes; and peak_MODEL.png, what each tag
// held when memory peaked, one stacked bar per technique with its total.
func (r *Result) Charts(dir string) ([]string, error) {
	var paths []string
	for _, m := range r.Models() {
		rows := r.rows(m)
		mem := filepath.Join(dir, "memory_"+m+".png")
		if err := memoryPanels(m, rows).save(mem); err != nil {
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
	p := newPlot(title, x, y)
	l := plot.NewLegend()
	l.Top, l.Left = true, true
	l.TextStyle.Font.Size = vg.Points(10)
	return &legended{p: p, l: l, width: width}
}

// newPlot returns a plot with a grid and axes labelled at round values.
func newPlot(title, x, y string) *plot.Plot {
	p := plot.New()
	p.Title.Text, p.X.Label.Text, p.Y.Label.Text = title, x, y
	p.Title.Padding = vg.Points(6)
	p.X.Tick.Marker, p.Y.Tick.Marker = roundTicks{10}, roundTicks{10}
	p.Add(plotter.NewGrid())
	return p
}

// roundTicks labels an axis at round values, at most most of them:
// multiples of 1, 2 or 5 times a power of ten (gonum's default labels as
// few as two).
type roundTicks struct{ most int }

// Ticks returns the labelled ticks between min and max.
func (r roundTicks) Ticks(min, max float64) []plot.Tick {
	if !(max > min) {
		return []plot.Tick{{Value: min, Label: strconv.FormatFloat(min, 'g', 4, 64)}}
	}
	// The step is m·10^e; ticks are the multiples k·m of 10^e in range,
	// scaled by dividing or multiplying by an exact power of ten.
	e := int(math.Floor(math.Log10(max - min)))
	m := 1.0
	for _, f := range []float64{0.1, 0.2, 0.5, 1, 2} {
		if (max-min)/(f*math.Pow10(e)) <= float64(r.most) {
			m = f
			break
		}
	}
	if m < 1 {
		e, m = e-1, m*10
	}
	at := func(k float64) float64 {
		if e < 0 {
			return k * m / math.Pow10(-e)
		}
		return k * m * math.Pow10(e)
	}
	var ts []plot.Tick
	for k := math.Ceil(min / at(1)); at(k) <= max; k++ {
		ts = append(ts, plot.Tick{Value: at(k), Label: strconv.FormatFloat(at(k), 'f', -1, 64)})
	}
	return ts
}

// panels are small multiples: one plot per technique on shared axes,
// under one title.
type panels struct {
	title string
	plots []*plot.Plot
}

// memoryPanels draws, for each row with a timeline, the bytes allocated
// during its step, plain's in grey behind every other technique's.
func memoryPanels(model string, rows []Row) *panels {
	pn := &panels{title: fmt.Sprintf("%s: bytes allocated during one training step (cpu, rank 0, batch %d); grey: plain", model, rows[0].Batch)}
	var plain plotter.XYs
	var maxX, maxY float64
	for _, row := range rows {
		if row.Timeline == nil || len(row.Timeline.Events) == 0 {
			continue
		}
		xy := timelineXY(row.Timeline, func(e device.Event) int64 { return e.Allocated })
		for _, p := range xy {
			maxX, maxY = max(maxX, p.X), max(maxY, p.Y)
		}
		title := fmt.Sprintf("%s\npeak %s", short(row.Technique), device.FormatBytes(row.Peak.Total))
		if v, ok := row.VsPlain["peak_total"]; ok && plain != nil {
			title += fmt.Sprintf(" (%.2f× plain)", v)
		}
		p := newPlot(title, "", "")
		p.Title.TextStyle.Font.Size = vg.Points(10)
		p.X.Tick.Marker, p.Y.Tick.Marker = roundTicks{5}, roundTicks{5}
		if plain != nil {
			addLine(p, plain, color.Gray{Y: 0xb4}, 1)
			addLine(p, xy, palette(0), 1.5)
		} else {
			plain = xy
			addLine(p, xy, color.Black, 1.5)
		}
		pn.plots = append(pn.plots, p)
	}
	for i, p := range pn.plots {
		p.X.Min, p.X.Max, p.Y.Min, p.Y.Max = 0, maxX*1.02, 0, maxY*1.08
		if i%panelCols == 0 {
			p.Y.Label.Text = "MiB"
		}
		if i >= len(pn.plots)-panelCols {
			p.X.Label.Text = "ms in the step"
		}
	}
	return pn
}

// panelCols is the number of columns of small multiples.
const panelCols = 4

// addLine adds a step line through xy to p.
func addLine(p *plot.Plot, xy plotter.XYs, c color.Color, width float64) {
	l, err := plotter.NewLine(xy)
	if err != nil {
		return
	}
	l.StepStyle, l.Color, l.Width = plotter.PostStep, c, vg.Points(width)
	p.Add(l)
}

// save draws the panels in a grid of up to four columns under the title.
func (pn *panels) save(path string) error {
	cols := min(max(len(pn.plots), 1), panelCols)
	rows := (len(pn.plots) + cols - 1) / cols
	w, h := chartW, vg.Length(max(rows, 1))*2.5*vg.Inch+0.4*vg.Inch
	img := vgimg.NewWith(vgimg.UseWH(w, h), vgimg.UseDPI(dpi))
	dc := draw.New(img)
	sty := plot.New().Title.TextStyle
	sty.Font.Size = vg.Points(13)
	dc.FillText(sty, vg.Point{X: w / 2, Y: h - vg.Points(8)}, pn.title)
	grid := make([][]*plot.Plot, rows)
	for j := range grid {
		grid[j] = make([]*plot.Plot, cols)
		for i := range cols {
			if k := j*cols + i; k < len(pn.plots) {
				grid[j][i] = pn.plots[k]
			}
		}
	}
	t := draw.Tiles{Rows: rows, Cols: cols, PadTop: vg.Points(28), PadBottom: vg.Points(4), PadLeft: vg.Points(4),
		PadRight: vg.Points(10), PadX: vg.Points(12), PadY: vg.Points(10)}
	if rows > 0 {
		cs := plot.Align(grid, t, dc)
		for j := range grid {
			for i, p := range grid[j] {
				if p != nil {
					p.Draw(cs[j][i])
				}
			}
		}
	}
	return writePNG(img, path)
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
	// Each bar's total at its end.
	var ends plotter.XYLabels
	var most float64
	for i := len(rows) - 1; i >= 0; i-- {
		v := float64(rows[i].AtPeak.Total) / (1 << 20)
		most = max(most, v)
		ends.XYs = append(ends.XYs, plotter.XY{X: v, Y: float64(len(rows) - 1 - i)})
		ends.Labels = append(ends.Labels, device.FormatBytes(rows[i].AtPeak.Total))
	}
	if l, err := plotter.NewLabels(ends); err == nil {
		l.Offset = vg.Point{X: vg.Points(4), Y: -vg.Points(4)}
		for i := range l.TextStyle {
			l.TextStyle[i].Font.Size = vg.Points(9)
		}
		c.p.Add(l)
	}
	c.p.X.Min, c.p.X.Max = 0, most*1.15
	return c
}

// short abbreviates a technique's name for a chart.
func short(name string) string {
	return strings.NewReplacer("checkpoint", "ckpt", "amp-params", "params").Replace(name)
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
	c.p.Draw(draw.Crop(dc, vg.Points(8), -c.width, vg.Points(4), -vg.Points(8)))
	c.l.Draw(draw.Crop(dc, chartW-c.width+vg.Points(8), 0, 0, -vg.Points(30)))
	return writePNG(img, path)
}

// writePNG writes a drawn canvas as a PNG file.
func writePNG(img *vgimg.Canvas, path string) error {
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
