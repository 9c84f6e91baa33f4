package bench

import (
	"fmt"
	"io"
	"runtime"
	"time"

	"github.com/headroom-ml/headroom/device"
	"github.com/headroom-ml/headroom/device/cpu"
	"github.com/headroom-ml/headroom/plan"
	"github.com/headroom-ml/headroom/train"
)

// Mode sets the size of a bench: batches, training steps and evaluation.
type Mode int

const (
	// Full is the default: the examples' batches (ResNet 128 images,
	// Transformer 32 sequences of 64 bytes), 100 training steps per run.
	Full Mode = iota
	// Quick takes about a minute on 2 cores: batches of 32 images and 8
	// sequences, 10 training steps per run, small evaluations.
	Quick
	// Tiny is for tests: batches of 4, 2 training steps, a few evaluation
	// samples.
	Tiny
)

// String names the mode.
func (m Mode) String() string {
	switch m {
	case Quick:
		return "quick"
	case Tiny:
		return "tiny"
	}
	return "full"
}

// Config says what to bench. The zero value runs every technique in Full
// mode on both models.
type Config struct {
	Mode Mode
	// Models are "resnet" and "transformer" (default: both, unless Speed
	// names models).
	Models []string
	// Speed are speed-only models (of SpeedModels): each in F32 and under
	// BF16 autocast, timed on synthetic data, no loss run.
	Speed []string
	// Timed > 0 times each plain, amp bf16 and checkpoint √n row of Models
	// and each Speed row as the median of Timed steps (≥ 5) after Warmup
	// untimed ones (0: 2; ≥ 2), as RunTorch times PyTorch's. With Timed 0 a
	// row's time is its loss run's mean step.
	Warmup, Timed int
	// Threads is the thread count PyTorch is given (0: GOMAXPROCS, which
	// is headroom's: the caller sets GOMAXPROCS before any work).
	Threads int
	// Techniques to run (nil: Techniques()). Plain is run first in any
	// case: it is every row's reference.
	Techniques []Technique
	// Steps is the number of training steps of each run that measures
	// loss and evaluation (0: the mode's; -1: no such run).
	Steps int
	// MNIST is the folder of the MNIST files (default: the Go module
	// cache's copy); Corpus the transformer's text, a file or folder
	// (default: $GOROOT/src/fmt, Go's fmt package).
	MNIST, Corpus string
	// Log receives a line per run (nil: nothing).
	Log io.Writer
	// Device is where every run trains: "cpu" (the default) or "cuda"
	// (cuda:0, and cuda:1… for the techniques with 2 ranks; opened through
	// device/cuda: without a GPU, Run fails at once with a
	// *train.DeviceError).
	Device string
	// ISA is "native" (or "", the CPU's widest kernels) or "avx2": both
	// sides on their AVX2 kernels (CheckISA, TorchISAEnv), a proxy for an
	// AVX2-only CPU.
	ISA string
}

// Setup is one model's bench configuration.
type Setup struct {
	// Name is "resnet" or "transformer".
	Name string
	// Plan is the planner's model, batch and sequence length: the plain
	// configuration each technique modifies.
	Plan plan.Config
	// Steps is the number of training steps of the loss run (0: none).
	Steps int
	// Args are the example program's flags for the loss run, except those
	// of the technique and the batch (Flags gives them).
	Args []string
	// Train runs the example program with flags.
	Train func(args []string) (*train.Report, error)
}

// Row is one technique's measurement on one model.
type Row struct {
	Model     string `json:"model"`
	Technique string `json:"technique"`
	// Flags are the example program's technique flags (the same training
	// step as the planner's).
	Flags []string `json:"flags"`
	Batch int      `json:"batch"`
	Ranks int      `json:"ranks"`
	// Peak is the peak of each tag and of the total (the largest rank's),
	// measured on Config.Device's devices by plan.Measure; AtPeak what each tag held
	// when the total peaked (it adds up to the total).
	Peak   train.PeakBytes  `json:"peak_bytes"`
	AtPeak train.PeakBytes  `json:"at_peak"`
	Host   *train.PeakBytes `json:"host_peak_bytes,omitempty"`
	// RankPeaks is every rank's peak total, by world rank, when the step
	// ran on more than one.
	RankPeaks []int64 `json:"rank_peak_bytes,omitempty"`
	// SecondsPerStep is the mean wall time of a step of the loss run and
	// SamplesPerSec its throughput; without a loss run, the time of the
	// measured step. MeasuredStepSeconds is the time of the step
	// plan.Measure timed (one step, with the timeline recording: noisier).
	SecondsPerStep      float64 `json:"seconds_per_step"`
	SamplesPerSec       float64 `json:"samples_per_sec"`
	MeasuredStepSeconds float64 `json:"measured_step_seconds"`
	// The loss run: the example program trained TrainSteps steps on real
	// data (MNIST, Go source) with the same technique.
	TrainSteps   int     `json:"train_steps"`
	FinalLoss    float64 `json:"final_loss"`
	Eval         float64 `json:"eval"`
	EvalMetric   string  `json:"eval_metric"`
	SkippedSteps int     `json:"skipped_steps,omitempty"`
	// TrainPeak is the loss run's peak by tag (its rank 0's) and
	// SamePeak whether it equals Peak tag by tag: the planner's step on
	// an all-zero batch and the example's training on real data allocate
	// the same bytes (f16 with loss scaling may differ: it skips
	// different steps on different data).
	TrainPeak train.PeakBytes `json:"train_peak_bytes"`
	SamePeak  bool            `json:"train_peak_equal"`
	// Params is the model's parameter count (the planner's); StepSeconds
	// the timed steps of Config.Timed (their median is what the PyTorch
	// comparison shows), each after Config.Warmup untimed ones.
	Params      int64     `json:"params"`
	StepSeconds []float64 `json:"step_seconds,omitempty"`
	// VsPlain is each number divided by the plain row's: peak_total,
	// peak_parameter … peak_other, seconds_per_step, samples_per_sec,
	// measured_step_seconds, final_loss and eval (a key is absent where
	// plain's is 0).
	VsPlain map[string]float64 `json:"vs_plain"`
	Note    string             `json:"note,omitempty"`
	// Timeline is the first rank's memory during the measured step.
	Timeline *device.Timeline `json:"-"`
	// View is the page of Timeline that Write wrote beside bench.json
	// (its file name there; headroom view bench.json#MODEL/TECHNIQUE reads it).
	View string `json:"view,omitempty"`
}

// Result is a bench's rows and how it ran.
type Result struct {
	Mode string `json:"mode"`
	CPUs int    `json:"cpus"`
	Arch string `json:"arch"`
	// Device is where the runs trained: cpu or cuda.
	Device string `json:"device"`
	// Kernels is the cpu device's instruction-set path (cpu.KernelPath).
	Kernels string `json:"kernels"`
	// CPUModel is /proc/cpuinfo's model name ("" elsewhere); Threads
	// GOMAXPROCS, the cpu device's workers.
	CPUModel string  `json:"cpu_model,omitempty"`
	Threads  int     `json:"threads"`
	Seconds  float64 `json:"seconds"`
	Rows     []Row   `json:"rows"`
	// Speed are the speed-only rows (Config.Speed).
	Speed []SpeedRow `json:"speed,omitempty"`
	// Torch is the PyTorch comparison, when it ran (RunTorch).
	Torch *TorchResult `json:"torch,omitempty"`
	// ISA is Config.ISA when it restricted both sides ("avx2"), else "".
	ISA string `json:"isa,omitempty"`
}

// Run benches every technique of c on every model: for each, plan.Measure
// runs the training step on c.Device's devices (peaks by tag, the step's
// timeline and time) and the example program trains it on real data (loss
// and evaluation). A technique that fails gets a row with the error in
// Note; Run fails only on bad configuration or when plain fails.
func Run(c Config) (*Result, error) {
	began := time.Now()
	setups, err := c.setups()
	if err != nil {
		return nil, err
	}
	techs := c.Techniques
	if techs == nil {
		techs = Techniques()
	}
	if len(techs) == 0 || techs[0].Name != "plain" {
		rest := techs
		techs = []Technique{Techniques()[0]}
		for _, t := range rest {
			if t.Name != "plain" {
				techs = append(techs, t)
			}
		}
	}
	if err := c.checkDevice(); err != nil {
		return nil, err
	}
	if err := c.checkSpeed(); err != nil {
		return nil, err
	}
	if err := CheckISA(c.ISA); err != nil {
		return nil, err
	}
	res := &Result{Mode: c.Mode.String(), CPUs: runtime.NumCPU(), Arch: runtime.GOARCH, Device: c.device(), Kernels: cpu.KernelPath(),
		CPUModel: CPUModel(), Threads: runtime.GOMAXPROCS(0), ISA: c.isa()}
	for _, s := range setups {
		var plain *Row
		for _, t := range techs {
			if !applies(t, s) {
				continue
			}
			r, err := measure(s, t, plain)
			if err == nil {
				err = c.timeRow(s, t, plain, r)
			}
			if err != nil {
				if plain == nil {
					return nil, fmt.Errorf("bench: %s plain: %w", s.Name, err)
				}
				r = &Row{Note: err.Error()}
			}
			r.Model, r.Technique = s.Name, t.Name
			if c.Log != nil {
				fmt.Fprintf(c.Log, "%-12s %-48s peak %10s  %7.3f s/step  loss %.4f  %s %.4f %s\n", s.Name, t.Name,
					device.FormatBytes(r.Peak.Total), r.SecondsPerStep, r.FinalLoss, r.EvalMetric, r.Eval, r.Note)
			}
			res.Rows = append(res.Rows, *r)
			if plain == nil {
				plain = r
			}
		}
	}
	res.compare()
	if res.Speed, err = c.runSpeed(); err != nil {
		return nil, err
	}
	res.Seconds = time.Since(began).Seconds()
	return res, nil
}

// device returns c.Device, "cpu" when empty.
func (c Config) device() string {
	if c.Device == "" {
		return plan.CPU
	}
	return c.Device
}

// checkDevice refuses a device other than cpu and cuda, and, for cuda,
// opens cuda:0 once, before any work, so that a machine without a GPU gets
// the *train.DeviceError (no driver, no GPU) at once.
func (c Config) checkDevice() error {
	switch c.device() {
	case plan.CPU:
		return nil
	case plan.CUDA:
		dev, err := train.OpenDevice(plan.CUDA, device.Options{})
		if err != nil {
			return err
		}
		return dev.Close()
	}
	return fmt.Errorf("bench: device %q: want cpu or cuda", c.Device)
}

// measure runs one technique on one model.
func measure(s Setup, t Technique, plain *Row) (*Row, error) {
	if t.Run != nil {
		return t.Run(s, plain)
	}
	pc := s.Plan
	if t.Apply != nil {
		t.Apply(&pc, plain)
	}
	pc.Timeline = true
	p, err := plan.Measure(pc)
	if err != nil {
		return nil, err
	}
	flags := Flags(pc)
	r := &Row{Flags: flags[1:], Batch: p.Batch, Params: p.Params, Ranks: len(p.Ranks), SecondsPerStep: p.Seconds, MeasuredStepSeconds: p.Seconds,
		Timeline: p.Timeline}
	if p.OOM != nil {
		r.Note = p.OOM.Error()
	}
	largest := 0
	for i, rk := range p.Ranks {
		if rk.Total > p.Ranks[largest].Total {
			largest = i
		}
	}
	rk := p.Ranks[largest]
	for i := range p.Ranks {
		if len(p.Ranks) > 1 {
			r.RankPeaks = append(r.RankPeaks, p.Ranks[i].Total)
		}
	}
	r.Peak, r.AtPeak, r.Host = rk.PeakBytes, rk.AtPeak, rk.Host
	if p.Seconds > 0 {
		r.SamplesPerSec = float64(p.Batch) / p.Seconds
	}
	if s.Steps > 0 {
		rep, err := s.Train(append(append(append([]string{}, s.Args...), "--steps="+fmt.Sprint(s.Steps)), flags...))
		if err != nil {
			return nil, fmt.Errorf("training run %v: %w", flags, err)
		}
		r.TrainSteps = rep.Steps
		if rep.SamplesPerSec > 0 {
			r.SamplesPerSec, r.SecondsPerStep = rep.SamplesPerSec, float64(p.Batch)/rep.SamplesPerSec
		}
		r.FinalLoss, r.Eval, r.EvalMetric = rep.FinalLoss, rep.Eval, rep.EvalMetric
		r.TrainPeak, r.SamePeak = rep.PeakBytes, rep.PeakBytes == p.Ranks[0].PeakBytes
		if n, ok := rep.Extra["skipped_steps"].(int); ok {
			r.SkippedSteps = n
		}
	}
	return r, nil
}

// compare fills every row's VsPlain from its model's plain row.
func (r *Result) compare() {
	plain := map[string]*Row{}
	for i := range r.Rows {
		row := &r.Rows[i]
		if row.Technique == "plain" {
			plain[row.Model] = row
		}
	}
	for i := range r.Rows {
		row := &r.Rows[i]
		p := plain[row.Model]
		if p == nil {
			continue
		}
		row.VsPlain = map[string]float64{}
		ratio := func(key string, a, b float64) {
			if b != 0 && a != 0 {
				row.VsPlain[key] = a / b
			}
		}
		for _, kv := range []struct {
			k    string
			a, b int64
		}{
			{"total", row.Peak.Total, p.Peak.Total}, {"parameter", row.Peak.Parameter, p.Peak.Parameter},
			{"gradient", row.Peak.Gradient, p.Peak.Gradient}, {"optimizer", row.Peak.Optimizer, p.Peak.Optimizer},
			{"activation", row.Peak.Activation, p.Peak.Activation}, {"workspace", row.Peak.Workspace, p.Peak.Workspace},
			{"communication", row.Peak.Communication, p.Peak.Communication}, {"other", row.Peak.Other, p.Peak.Other},
		} {
			ratio("peak_"+kv.k, float64(kv.a), float64(kv.b))
		}
		ratio("seconds_per_step", row.SecondsPerStep, p.SecondsPerStep)
		ratio("samples_per_sec", row.SamplesPerSec, p.SamplesPerSec)
		ratio("measured_step_seconds", row.MeasuredStepSeconds, p.MeasuredStepSeconds)
		ratio("final_loss", row.FinalLoss, p.FinalLoss)
		ratio("eval", row.Eval, p.Eval)
	}
}
