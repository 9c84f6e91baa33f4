package train

import (
	"fmt"
	"io"
	"os"
	"time"

	"github.com/headroom-ml/headroom/device"
	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"
)

// Progress shows a training run's progress: a bar with loss, throughput
// and memory on a terminal, plain lines (every twentieth of the steps)
// otherwise. A nil *Progress shows nothing.
type Progress struct {
	from, total int
	bar         *progressbar.ProgressBar
	w           io.Writer
	every       int
	start       time.Time
}

// NewProgress starts a display of steps from+1 to total (1-based; from is
// where a resumed run starts) on w: a bar when w is a terminal.
func NewProgress(w io.Writer, from, total int, desc string) *Progress {
	p := &Progress{from: from, total: total, w: w, every: max(1, (total-from)/20), start: time.Now()}
	if f, ok := w.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		p.bar = progressbar.NewOptions(total,
			progressbar.OptionSetWriter(w), progressbar.OptionSetDescription(desc),
			progressbar.OptionShowCount(), progressbar.OptionSetWidth(24),
			progressbar.OptionThrottle(100*time.Millisecond), progressbar.OptionClearOnFinish())
		p.bar.Set(from)
	} else if from == 0 {
		fmt.Fprintf(w, "%s: %d steps\n", desc, total)
	} else {
		fmt.Fprintf(w, "%s: steps %d to %d\n", desc, from+1, total)
	}
	return p
}

// Step reports that step i (0-based, counted from the run's start) finished
// with the given loss.
func (p *Progress) Step(i int, loss, samplesPerSec float64, dev *device.Device) {
	if p == nil {
		return
	}
	cur, peak := dev.CurrentBytes(), dev.PeakBytes()
	line := fmt.Sprintf("loss %.4f  %.1f samples/s  mem %s (peak %s)", loss, samplesPerSec, device.FormatBytes(cur), device.FormatBytes(peak))
	if p.bar != nil {
		p.bar.Describe(line)
		p.bar.Set(i + 1)
		return
	}
	if (i-p.from)%p.every == 0 || i == p.total-1 {
		fmt.Fprintf(p.w, "step %*d/%d  %s  %.0fs\n", len(fmt.Sprint(p.total)), i+1, p.total, line, time.Since(p.start).Seconds())
	}
}

// Done ends the display.
func (p *Progress) Done() {
	if p != nil && p.bar != nil {
		p.bar.Finish()
		fmt.Fprintln(p.w)
	}
}
