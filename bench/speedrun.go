package bench

import (
	"bufio"
	"fmt"
	"os"
	"runtime"
	"slices"
	"strings"

	"github.com/headroom-ml/headroom/device"
	"github.com/headroom-ml/headroom/dtype"
	"github.com/headroom-ml/headroom/plan"
)

// SpeedRow is one speed model's timing in one dtype (Config.Speed).
type SpeedRow struct {
	Model string `json:"model"`
	// Technique is "plain" (F32) or "amp bf16" (BF16 autocast).
	Technique string `json:"technique"`
	Params    int64  `json:"params"`
	Batch     int    `json:"batch"`
	// Warmup untimed steps ran before the StepSeconds; SecondsPerStep is
	// their median and SamplesPerSec Batch over it.
	Warmup         int       `json:"warmup"`
	StepSeconds    []float64 `json:"step_seconds"`
	SecondsPerStep float64   `json:"seconds_per_step"`
	SamplesPerSec  float64   `json:"samples_per_sec"`
	// RoundSeconds are the rounds' medians when MergeRounds merged
	// several (SecondsPerStep is then their median), else empty.
	RoundSeconds []float64 `json:"round_seconds,omitempty"`
	// PeakBytes is the cpu device's peak of exact requested bytes over
	// all the steps.
	PeakBytes int64 `json:"peak_bytes"`
}

// timedTechniques are the techniques PyTorch runs too, the ones
// Config.Timed times.
var timedTechniques = []string{"plain", "amp bf16", "checkpoint √n"}

// speedTechniques are the speed rows' dtypes by technique name.
var speedTechniques = []struct {
	name string
	dt   dtype.DType
}{{"plain", dtype.F32}, {"amp bf16", dtype.BF16}}

// timing returns the warm-up and timed step counts (Warmup 0: 2; Timed 0:
// 5, for Speed rows, which are always timed).
func (c Config) timing() (warmup, timed int) {
	warmup, timed = c.Warmup, c.Timed
	if warmup == 0 {
		warmup = 2
	}
	if timed == 0 {
		timed = 5
	}
	return warmup, timed
}

// threads is the thread count PyTorch is given: Threads, or GOMAXPROCS.
func (c Config) threads() int {
	if c.Threads > 0 {
		return c.Threads
	}
	return runtime.GOMAXPROCS(0)
}

// checkSpeed refuses unknown speed models, a speed run on another device
// than the cpu, and too few warm-up or timed steps.
func (c Config) checkSpeed() error {
	for _, m := range c.Speed {
		if !slices.Contains(SpeedModels(), m) {
			return fmt.Errorf("bench: unknown speed model %q (want one of %v)", m, SpeedModels())
		}
	}
	if len(c.Speed) > 0 && c.device() != plan.CPU {
		return fmt.Errorf("bench: speed models run on the cpu only, not %s", c.device())
	}
	if c.Threads < 0 {
		return fmt.Errorf("bench: threads %d: want ≥ 1 (0: GOMAXPROCS)", c.Threads)
	}
	if c.Timed == 0 && c.Warmup == 0 {
		return nil
	}
	return checkTiming(c.timing())
}

// timeRow fills r.StepSeconds when c.Timed > 0 and t is one of the
// timedTechniques: each timed step is the last of a plan.Measure of
// Warmup + 1 steps (a fresh model each time, without the timeline).
func (c Config) timeRow(s Setup, t Technique, plain *Row, r *Row) error {
	if c.Timed == 0 || t.Run != nil || !slices.Contains(timedTechniques, t.Name) {
		return nil
	}
	warmup, timed := c.timing()
	pc := s.Plan
	if t.Apply != nil {
		t.Apply(&pc, plain)
	}
	pc.Steps, pc.Timeline = warmup+1, false
	for range timed {
		p, err := plan.Measure(pc)
		if err != nil {
			return fmt.Errorf("timing: %w", err)
		}
		r.StepSeconds = append(r.StepSeconds, p.Seconds)
	}
	return nil
}

// wants reports whether c runs the technique named name: plain always,
// the others when c.Techniques is nil (all) or names them.
func (c Config) wants(name string) bool {
	if c.Techniques == nil || name == "plain" {
		return true
	}
	for _, t := range c.Techniques {
		if t.Name == name {
			return true
		}
	}
	return false
}

// torchTechniques are the timedTechniques c wants, comma-separated, for
// the PyTorch script's --techniques.
func (c Config) torchTechniques() string {
	var ts []string
	for _, t := range timedTechniques {
		if c.wants(t) {
			ts = append(ts, t)
		}
	}
	return strings.Join(ts, ",")
}

// runSpeed runs c.Speed's models in each of speedTechniques that c wants
// (--techniques plain: F32 only, on both sides under --torch).
func (c Config) runSpeed() ([]SpeedRow, error) {
	var rows []SpeedRow
	for _, m := range c.Speed {
		for _, t := range speedTechniques {
			if !c.wants(t.name) {
				continue
			}
			r, err := c.speedRow(m, t.name, t.dt)
			if err != nil {
				return nil, err
			}
			if c.Log != nil {
				fmt.Fprintf(c.Log, "%-12s %-48s peak %10s  %7.3f s/step (median of %d)\n", m, t.name, device.FormatBytes(r.PeakBytes), r.SecondsPerStep, len(r.StepSeconds))
			}
			rows = append(rows, *r)
		}
	}
	return rows, nil
}

// speedRow times one speed model in one dtype.
func (c Config) speedRow(model, technique string, dt dtype.DType) (*SpeedRow, error) {
	s, err := NewSpeedStep(model, dt)
	if err != nil {
		return nil, err
	}
	defer s.Release()
	warmup, timed := c.timing()
	secs, err := TimeSteps(s.Run, warmup, timed)
	if err != nil {
		return nil, fmt.Errorf("bench: %s %s: %w", model, technique, err)
	}
	med := Median(secs)
	return &SpeedRow{Model: model, Technique: technique, Params: s.Params(), Batch: s.Batch, Warmup: warmup, StepSeconds: secs,
		SecondsPerStep: med, SamplesPerSec: float64(s.Batch) / med, PeakBytes: s.PeakBytes()}, nil
}

// CPUModel returns /proc/cpuinfo's first model name, "" where there is
// none.
func CPUModel() string {
	f, err := os.Open("/proc/cpuinfo")
	if err != nil {
		return ""
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if k, v, ok := strings.Cut(sc.Text(), ":"); ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return ""
}
