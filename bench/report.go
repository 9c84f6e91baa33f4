package bench

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/headroom-ml/headroom/device"
	"github.com/headroom-ml/headroom/plan"
	"github.com/headroom-ml/headroom/train"
)

// WriteJSON writes the result as indented JSON.
func (r *Result) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	if err := enc.Encode(r); err != nil {
		return fmt.Errorf("bench: writing JSON: %w", err)
	}
	return nil
}

// ReadResult reads what WriteJSON wrote (without the timelines) and
// checks it: no negative count, size, time or ratio; at most TrainSteps
// skipped steps; each row's peaks fit together (train.PeakBytes.Check) and
// its tags at the peak add up to the total (CheckHeld). An impossible file
// is an error naming the row, the field and its value.
func ReadResult(rd io.Reader) (*Result, error) {
	var r Result
	if err := json.NewDecoder(rd).Decode(&r); err != nil {
		return nil, fmt.Errorf("bench: reading result: %w", err)
	}
	if err := r.check(); err != nil {
		return nil, fmt.Errorf("bench: reading result: %w", err)
	}
	return &r, nil
}

// check is ReadResult's validation.
func (r *Result) check() error {
	if err := train.NonNegative(map[string]float64{"cpus": float64(r.CPUs), "seconds": r.Seconds}); err != nil {
		return err
	}
	for i, row := range r.Rows {
		if err := row.check(); err != nil {
			return fmt.Errorf("row %d (%s/%s): %w", i, row.Model, row.Technique, err)
		}
	}
	for i, s := range r.Speed {
		nums := map[string]float64{"params": float64(s.Params), "batch": float64(s.Batch), "warmup": float64(s.Warmup),
			"seconds_per_step": s.SecondsPerStep, "samples_per_sec": s.SamplesPerSec, "peak_bytes": float64(s.PeakBytes)}
		if err := nonNegativeSteps(nums, s.StepSeconds); err != nil {
			return fmt.Errorf("speed row %d (%s/%s): %w", i, s.Model, s.Technique, err)
		}
	}
	if r.Torch == nil {
		return nil
	}
	if r.Torch.Threads < 0 || r.Torch.InteropThreads < 0 {
		return fmt.Errorf("torch: threads %d and %d inter-op, want ≥ 0", r.Torch.Threads, r.Torch.InteropThreads)
	}
	for i, t := range r.Torch.Rows {
		if err := nonNegativeSteps(map[string]float64{"params": float64(t.Params), "batch": float64(t.Batch), "steps": float64(t.Steps),
			"seconds_per_step": t.SecondsPerStep, "samples_per_sec": t.SamplesPerSec, "peak_bytes": float64(t.PeakBytes),
			"warmup": float64(t.Warmup)}, t.StepSeconds); err != nil {
			return fmt.Errorf("torch row %d (%s/%s): %w", i, t.Model, t.Technique, err)
		}
	}
	return nil
}

// nonNegativeSteps is train.NonNegative of nums and of each step's
// seconds.
func nonNegativeSteps(nums map[string]float64, steps []float64) error {
	for i, v := range steps {
		nums[fmt.Sprintf("step_seconds[%d]", i)] = v
	}
	return train.NonNegative(nums)
}

func (row *Row) check() error {
	nums := map[string]float64{"batch": float64(row.Batch), "ranks": float64(row.Ranks), "seconds_per_step": row.SecondsPerStep,
		"samples_per_sec": row.SamplesPerSec, "measured_step_seconds": row.MeasuredStepSeconds,
		"train_steps": float64(row.TrainSteps), "skipped_steps": float64(row.SkippedSteps)}
	for k, v := range row.VsPlain {
		nums["vs_plain."+k] = v
	}
	if err := nonNegativeSteps(nums, row.StepSeconds); err != nil {
		return err
	}
	if row.SkippedSteps > row.TrainSteps {
		return fmt.Errorf("skipped_steps %d is above train_steps %d", row.SkippedSteps, row.TrainSteps)
	}
	peaks := map[string]*train.PeakBytes{"peak_bytes": &row.Peak, "train_peak_bytes": &row.TrainPeak, "host_peak_bytes": row.Host}
	for _, name := range []string{"peak_bytes", "train_peak_bytes", "host_peak_bytes"} {
		if p := peaks[name]; p != nil {
			if err := p.Check(); err != nil {
				return fmt.Errorf("%s: %w", name, err)
			}
		}
	}
	if err := row.AtPeak.CheckHeld(); err != nil {
		return fmt.Errorf("at_peak: %w", err)
	}
	return nil
}

// Models returns the models of the rows, in order of appearance.
func (r *Result) Models() []string {
	var ms []string
	seen := map[string]bool{}
	for _, row := range r.Rows {
		if !seen[row.Model] {
			seen[row.Model] = true
			ms = append(ms, row.Model)
		}
	}
	return ms
}

// rows returns the rows of one model.
func (r *Result) rows(model string) []Row {
	var out []Row
	for _, row := range r.Rows {
		if row.Model == model {
			out = append(out, row)
		}
	}
	return out
}

// Markdown renders one table per model: the peak and what each tag held
// at that moment (the largest rank's; the tags add up to the peak), the
// step's time and throughput, and the training run's loss and evaluation,
// each technique against plain; then, when PyTorch ran, the two side by
// side. Each tag's own peak, reached at other moments, is in the JSON
// (Row.Peak), not here.
func (r *Result) Markdown() string {
	var b strings.Builder
	for _, m := range r.Models() {
		rows := r.rows(m)
		metric := ""
		for _, row := range rows {
			if row.EvalMetric != "" {
				metric = row.EvalMetric
				break
			}
		}
		on := ""
		if r.Device == plan.CUDA {
			on = " on cuda devices"
		}
		fmt.Fprintf(&b, "**%s** (batch %d%s; the peak of the largest rank, measured by plan.Measure, and what each tag held at that moment: they add up to it", m, rows[0].Batch, on)
		if rows[0].TrainSteps > 0 {
			fmt.Fprintf(&b, "; s/step, samples/s, loss and eval: the example trained %d steps on real data", rows[0].TrainSteps)
		}
		if metric != "" {
			fmt.Fprintf(&b, "; eval: %s", strings.ReplaceAll(metric, "_", " "))
		}
		b.WriteString(")\n\n")
		b.WriteString("| technique | peak | × plain | parameter | gradient | optimizer | activation | workspace | comm. | other | s/step | × plain | samples/s | loss | eval |\n")
		b.WriteString("|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|\n")
		var notes []string
		same, runs := 0, 0
		for _, row := range rows {
			if row.TrainSteps > 0 {
				runs++
				if row.SamePeak {
					same++
				}
			}
			evalSteps := row.TrainSteps
			if row.EvalMetric == "" {
				evalSteps = 0 // not evaluated (a split model's run)
			}
			fmt.Fprintf(&b, "| %s | %s | %s | %s | %.3f | %s | %.1f | %s | %s |\n",
				row.Technique, mib(row.Peak.Total), times(row.VsPlain, "peak_total"), atPeakCells(row), row.SecondsPerStep,
				times(row.VsPlain, "seconds_per_step"), row.SamplesPerSec, num(row.FinalLoss, row.TrainSteps), num(row.Eval, evalSteps))
			if row.Host != nil {
				notes = append(notes, fmt.Sprintf("%s: the host holds %s at its peak (optimizer %s).", row.Technique,
					device.FormatBytes(row.Host.Total), device.FormatBytes(row.Host.Optimizer)))
			}
			if row.SkippedSteps > 0 {
				notes = append(notes, fmt.Sprintf("%s: the loss scaler skipped %d of %d training steps (overflow while the scale backs off).",
					row.Technique, row.SkippedSteps, row.TrainSteps))
			}
			if row.Note != "" {
				notes = append(notes, fmt.Sprintf("%s: %s", row.Technique, row.Note))
			}
		}
		if runs > 0 {
			notes = append(notes, fmt.Sprintf("the example's training run on real data reached the same peak bytes, tag by tag, as the measured step in %d of %d rows.", same, runs))
		}
		for _, n := range notes {
			fmt.Fprintf(&b, "\n- %s", n)
		}
		if len(notes) > 0 {
			b.WriteString("\n")
		}
		b.WriteString("\n")
	}
	if r.Torch != nil {
		b.WriteString(SideBySide(r, r.Torch))
	} else if len(r.Speed) > 0 {
		b.WriteString(speedTable(r))
	}
	return b.String()
}

// atPeakCells renders what each tag held at the peak, in report order,
// as table cells ("–" where the row has no such record, as a technique
// with its own Run may not).
func atPeakCells(row Row) string {
	cells := make([]string, device.NumTags)
	for _, t := range device.Tags() {
		cells[t] = "–"
		if row.AtPeak.Total > 0 {
			cells[t] = mib(tagOf(row.AtPeak, t))
		}
	}
	return strings.Join(cells, " | ")
}

// mib renders bytes in MiB with two decimals ("0" for none, bytes or KiB
// below 10 KiB).
func mib(n int64) string {
	switch {
	case n == 0:
		return "0"
	case n < 10<<10:
		return device.FormatBytes(n)
	}
	return fmt.Sprintf("%.2f MiB", float64(n)/(1<<20))
}

func times(m map[string]float64, k string) string {
	v, ok := m[k]
	if !ok {
		return "–"
	}
	return fmt.Sprintf("%.2f×", v)
}

func num(v float64, steps int) string {
	if steps == 0 {
		return "–"
	}
	return fmt.Sprintf("%.4f", v)
}

// Write writes bench.json, bench.md, each row's memory page (writeViews)
// and the charts (Charts) into dir, creating it, and returns the paths
// written.
func (r *Result) Write(dir string) ([]string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("bench: %w", err)
	}
	views, err := r.writeViews(dir)
	if err != nil {
		return nil, err
	}
	var js strings.Builder
	if err := r.WriteJSON(&js); err != nil {
		return nil, err
	}
	paths := []string{filepath.Join(dir, "bench.json"), filepath.Join(dir, "bench.md")}
	for i, data := range []string{js.String(), r.Markdown()} {
		if err := train.WriteFileAtomic(paths[i], []byte(data)); err != nil {
			return nil, err
		}
		if err := os.Chmod(paths[i], 0o644); err != nil {
			return nil, fmt.Errorf("bench: %w", err)
		}
	}
	pngs, err := r.Charts(dir)
	return append(append(paths, views...), pngs...), err
}
