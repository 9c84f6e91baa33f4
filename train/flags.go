package train

import (
	"flag"
	"fmt"
	"sort"
	"strings"

	"github.com/headroom-ml/headroom/device"
)

// Common holds the flags every example shares. Register adds them to a
// FlagSet; after parsing, Set reports which were given on the command line.
type Common struct {
	Steps    int
	Epochs   int
	Batch    int
	LR       float64
	Seed     uint64
	Data     string
	Device   string
	MemLimit string
	Save     string
	Resume   string
	Report   string
	// StopAfter ends the run after this step (0: at the end), as if it
	// were interrupted there: with --save, the snapshot resumes the run.
	StopAfter int

	// Technique flags. Each example says which it supports; the others
	// are refused by Check with "not available yet".
	AMP              string
	AMPParams        bool
	Checkpoint       string
	CheckpointBudget string
	Accum            int
	Ranks            int
	Zero             int
	Offload          bool
	MPI              bool
	Quantize         string
	Calibrate        int
	QAT              bool
	Prune            float64
	MemAlert         float64
	MemLog           string

	fs *flag.FlagSet
}

// Defaults are an example's default values for the common flags.
type Defaults struct {
	Steps, Epochs, Batch int
	LR                   float64
}

// Register adds the common flags to fs with the given defaults.
func (c *Common) Register(fs *flag.FlagSet, d Defaults) {
	c.fs = fs
	fs.IntVar(&c.Steps, "steps", d.Steps, "training steps (0: run --epochs)")
	fs.IntVar(&c.Epochs, "epochs", d.Epochs, "training epochs, when --steps is 0")
	fs.IntVar(&c.Batch, "batch", d.Batch, "batch size")
	fs.Float64Var(&c.LR, "lr", d.LR, "peak learning rate")
	fs.Uint64Var(&c.Seed, "seed", 1, "random seed (initialisation, data order, dropout)")
	fs.StringVar(&c.Data, "data", "", "data directory or file (default: the example's built-in source)")
	fs.StringVar(&c.Device, "device", "cpu", "device: cpu")
	fs.StringVar(&c.MemLimit, "mem-limit", "", "capacity of the device, e.g. 2GiB (default: unlimited)")
	fs.StringVar(&c.Save, "save", "", "write a resumable snapshot to this file at the end")
	fs.StringVar(&c.Resume, "resume", "", "resume from a snapshot file")
	fs.StringVar(&c.Report, "report", "", "write a JSON report of the run to this file")
	fs.IntVar(&c.StopAfter, "stop-after", 0, "stop after this step, as if interrupted (with --save: a resumable snapshot)")

	fs.StringVar(&c.AMP, "amp", "", "mixed precision: bf16 or fp16 (--amp alone: bf16)")
	fs.BoolVar(&c.AMPParams, "amp-params", false, "keep parameters and gradients in the --amp dtype with fp32 master weights in the optimizer")
	fs.StringVar(&c.Checkpoint, "checkpoint", "", "activation checkpointing: N segments (--checkpoint alone: ⌈√n⌉)")
	fs.StringVar(&c.CheckpointBudget, "checkpoint-budget", "", "activation checkpointing under a byte budget, e.g. 256MiB")
	fs.IntVar(&c.Accum, "accum", 1, "gradient accumulation: --batch is cut into this many micro-batches whose gradients add up before each optimizer step")
	fs.IntVar(&c.Ranks, "ranks", 1, "data-parallel ranks, in-process: N goroutines on devices cpu:0…cpu:N-1, each of --mem-limit's capacity; --batch is the global batch, each rank trains on batch/N of it")
	fs.IntVar(&c.Zero, "zero", 0, "ZeRO stage: 0 every rank holds all model states, 1 optimizer state sharded over the ranks, 2 gradients too, 3 parameters too (gathered by layer when used)")
	fs.BoolVar(&c.MPI, "mpi", false, "run as one rank of an mpirun launch (mpirun -np N prog --mpi --ranks N …; needs a build with -tags mpi, see docs/MPI.md)")
	fs.BoolVar(&c.Offload, "offload", false, "with --zero 1, 2 or 3: optimizer state and f32 master weights on a host device cpu:100+r, where the step runs")
	fs.StringVar(&c.Quantize, "quantize", "", "quantize for inference: int8")
	fs.IntVar(&c.Calibrate, "calibrate", 0, "calibration batches for static int8 quantization")
	fs.BoolVar(&c.QAT, "qat", false, "quantization-aware fine-tuning before converting")
	fs.Float64Var(&c.Prune, "prune", 0, "prune this fraction of channels (0.3 = 30%)")
	fs.Float64Var(&c.MemAlert, "mem-alert", 0, "save a resumable snapshot and stop when a step's peak passes this fraction of --mem-limit (e.g. 0.9)")
	fs.StringVar(&c.MemLog, "mem-log", "", "write one JSON line of memory per step to this file")
}

// OptionalValue lists the flags that may be given without a value, with
// the value they then take: "--amp" means "--amp=bf16", "--checkpoint"
// means "--checkpoint=sqrt".
var OptionalValue = map[string]string{"amp": "bf16", "checkpoint": "sqrt"}

// NormalizeArgs rewrites command-line arguments so that the flags of
// OptionalValue work with a space-separated value ("--amp fp16"), with an
// equals sign, or alone ("--amp").
func NormalizeArgs(args []string, accept map[string]func(string) bool) []string {
	var out []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		name := strings.TrimLeft(a, "-")
		def, ok := OptionalValue[name]
		if !ok || !strings.HasPrefix(a, "-") || strings.Contains(name, "=") {
			out = append(out, a)
			continue
		}
		if i+1 < len(args) && !strings.HasPrefix(args[i+1], "-") && accept[name] != nil && accept[name](args[i+1]) {
			out = append(out, "--"+name+"="+args[i+1])
			i++
			continue
		}
		out = append(out, "--"+name+"="+def)
	}
	return out
}

// Set reports whether the flag was given on the command line.
func (c *Common) Set(name string) bool {
	set := false
	c.fs.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}

// Capacity returns the --mem-limit in bytes (0: unlimited).
func (c *Common) Capacity() (int64, error) {
	if c.MemLimit == "" {
		return 0, nil
	}
	n, err := device.ParseBytes(c.MemLimit)
	if err != nil {
		return 0, fmt.Errorf("--mem-limit: %w", err)
	}
	return n, nil
}

// techniqueFlags are the flags that turn on a technique.
var techniqueFlags = []string{"amp", "amp-params", "checkpoint", "checkpoint-budget", "accum", "ranks", "zero", "offload", "quantize", "calibrate", "qat", "prune", "mem-alert"}

// Check refuses technique flags that the example does not support yet,
// and devices other than cpu.
func (c *Common) Check(supported ...string) error {
	if c.Device != "cpu" {
		return fmt.Errorf("--device %s: not available yet (only cpu)", c.Device)
	}
	ok := map[string]bool{}
	for _, s := range supported {
		ok[s] = true
	}
	var refused []string
	for _, f := range techniqueFlags {
		if c.Set(f) && !ok[f] {
			refused = append(refused, "--"+f)
		}
	}
	if len(refused) > 0 {
		sort.Strings(refused)
		return fmt.Errorf("%s: not available yet in this version", strings.Join(refused, ", "))
	}
	if c.Batch <= 0 {
		return fmt.Errorf("--batch %d: want a positive batch size", c.Batch)
	}
	if c.Steps < 0 || c.Epochs < 0 || (c.Steps == 0 && c.Epochs == 0) {
		return fmt.Errorf("--steps %d, --epochs %d: want a positive number of steps or epochs", c.Steps, c.Epochs)
	}
	if c.Accum < 1 || c.Batch%c.Accum != 0 {
		return fmt.Errorf("--accum %d with --batch %d: want a positive number of micro-batches that divides the batch", c.Accum, c.Batch)
	}
	if !(c.LR > 0) {
		return fmt.Errorf("--lr %g: want a positive learning rate", c.LR)
	}
	return c.CheckParallel()
}

// Values returns every flag of the set with its value, for reports.
func (c *Common) Values() map[string]string {
	m := map[string]string{}
	c.fs.VisitAll(func(f *flag.Flag) { m[f.Name] = f.Value.String() })
	return m
}

// Micro returns the micro-batch of one rank: --batch split over --ranks,
// then into --accum micro-batches.
func (c *Common) Micro() int { return c.Batch / max(c.Ranks, 1) / max(c.Accum, 1) }

// TotalSteps returns the run's optimizer steps: --steps, or --epochs times
// perEpoch (the steps of one pass over the training data) when --steps is
// 0; an error when that is no step at all.
func (c *Common) TotalSteps(perEpoch int) (int, error) {
	if c.Steps > 0 {
		return c.Steps, nil
	}
	if n := c.Epochs * perEpoch; n > 0 {
		return n, nil
	}
	return 0, fmt.Errorf("--epochs %d: the training data holds no full step of --batch %d", c.Epochs, c.Batch)
}

// End returns the step the run stops after: steps, or --stop-after when
// it comes first.
func (c *Common) End(steps int) int {
	if c.StopAfter > 0 && c.StopAfter < steps {
		return c.StopAfter
	}
	return steps
}
