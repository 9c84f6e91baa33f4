package train

import (
	"flag"
	"strings"

	"github.com/headroom-ml/headroom/device"
)

// Common holds the flags every example shares. Register adds them to a
// FlagSet; Parse reads and checks a command line; after parsing, Set
// reports which were given.
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
	// Init is a model file (nn.Save's) to start from instead of the
	// seed's initialisation (LoadModel); with --resume it is not read.
	Init string
	// StopAfter ends the run after this step (0: at the end), as if it
	// were interrupted there: with --save, the snapshot resumes the run.
	StopAfter int
	// Override lets --resume change flags that change the run.
	Override bool

	// Technique flags. Each example says which it supports; the others
	// are refused by Check with "not available yet".
	AMP       string
	AMPParams bool
	// GradF32 keeps the gradients of --amp-params' 16-bit parameters in
	// F32 (amp.MainGradsF32: Megatron's main_grad).
	GradF32          bool
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
	// Model parallelism (GPT programs): TP tensor-parallel ranks, PP
	// pipeline stages, SequenceParallel inside the TP group, PipeSchedule
	// "1f1b" or "gpipe" (the micro-batches are --accum's). See
	// CheckSplit.
	TP, PP           int
	SequenceParallel bool
	PipeSchedule     string
	View
	ActivationFlags
	StepFlags

	fs      *flag.FlagSet
	resumed *Snapshot // the --resume snapshot's metadata, read by Parse
}

// Defaults are an example's default values for the common flags.
type Defaults struct {
	Steps, Epochs, Batch int
	LR                   float64
}

// Register adds the common flags to fs with the given defaults.
func (c *Common) Register(fs *flag.FlagSet, d Defaults) {
	c.fs = fs
	fs.IntVar(&c.Steps, "steps", d.Steps, "optimizer steps, ≥ 0 (0: run --epochs)")
	fs.IntVar(&c.Epochs, "epochs", d.Epochs, "passes over the training data, ≥ 0: the run's length when --steps is 0 or not given")
	fs.IntVar(&c.Batch, "batch", d.Batch, "samples per optimizer step, ≥ 1 and a multiple of --ranks × --accum")
	fs.Float64Var(&c.LR, "lr", d.LR, "peak learning rate, > 0 and finite")
	fs.Uint64Var(&c.Seed, "seed", 1, "random seed (initialisation, data order, dropout), 0 to 2⁶⁴−1")
	fs.StringVar(&c.Data, "data", "", "data folder or file, which must exist (default: the example's built-in source)")
	fs.StringVar(&c.Device, "device", "cpu", "device: cpu, cuda or cuda:N (an NVIDIA GPU; exit status 69 when none can be opened)")
	fs.StringVar(&c.MemLimit, "mem-limit", "", "capacity of the device, a positive size such as 2GiB or 512MiB (default: unlimited)")
	fs.StringVar(&c.Save, "save", "", "write a resumable snapshot to this file at the end (its folder must exist and be writable)")
	fs.StringVar(&c.Resume, "resume", "", "resume from a snapshot written by --save: the flags not given take the snapshot's values, and one that changes the run needs --override")
	fs.BoolVar(&c.Override, "override", false, "with --resume: accept flags that change the run from the snapshot's (--steps, --batch, --lr, --amp, …); each change is printed as a warning")
	fs.StringVar(&c.Init, "init", "", "start from the model in this safetensors file (every parameter and buffer by name, as nn.Save writes) instead of the seed's initialisation; under --zero 3 each rank reads only its shard of it")
	fs.StringVar(&c.Report, "report", "", "write a JSON report of the run to this file (its folder must exist and be writable)")
	fs.IntVar(&c.StopAfter, "stop-after", 0, "stop after this step, ≥ 0, as if interrupted (0: at the end; with --save: a resumable snapshot)")

	fs.StringVar(&c.AMP, "amp", "", "autocast: the forward in bf16 or fp16, parameters in f32 (--amp alone: bf16)")
	fs.BoolVar(&c.AMPParams, "amp-params", false, "with --amp: parameters and gradients in the --amp dtype too, with f32 master weights in the optimizer")
	fs.BoolVar(&c.GradF32, "grad-f32", false, "with --amp-params: the 16-bit parameters' gradients accumulate (over --accum micro-batches) and are reduced over --ranks in f32, and the f32 master update reads them (Megatron's main_grad: 2 bytes more per parameter)")
	fs.StringVar(&c.Checkpoint, "checkpoint", "", "activation checkpointing: N ≥ 1 segments (--checkpoint alone: ⌈√n⌉)")
	fs.StringVar(&c.CheckpointBudget, "checkpoint-budget", "", "activation checkpointing under a byte budget, a positive size such as 256MiB (not with --checkpoint)")
	fs.IntVar(&c.Accum, "accum", 1, "gradient accumulation, ≥ 1: --batch is cut into this many micro-batches whose gradients add up before each optimizer step")
	fs.IntVar(&c.Ranks, "ranks", 1, "data-parallel ranks, ≥ 1, in-process: N goroutines on devices cpu:0…cpu:N-1 (with --device cuda:K the GPUs cuda:K…cuda:K+N-1), each of --mem-limit's capacity; --batch is the global batch, each rank trains on batch/N of it")
	fs.IntVar(&c.Zero, "zero", 0, "ZeRO stage: 0 every rank holds all model states, 1 optimizer state sharded over the ranks, 2 gradients too, 3 parameters too (gathered by layer when used)")
	fs.BoolVar(&c.MPI, "mpi", false, "run as one rank of an mpirun launch (mpirun -np N prog --mpi --ranks N …; needs a build with -tags mpi, see docs/MPI.md)")
	fs.BoolVar(&c.Offload, "offload", false, "with --zero 1, 2 or 3: optimizer state and f32 master weights on a host device cpu:100+r, where the step runs")
	fs.StringVar(&c.Quantize, "quantize", "", "quantize for inference after training: int8")
	fs.IntVar(&c.Calibrate, "calibrate", 0, "with --quantize: static int8 quantization calibrated on this many batches, ≥ 0 (0: dynamic)")
	fs.BoolVar(&c.QAT, "qat", false, "with --quantize: quantization-aware fine-tuning before converting")
	fs.Float64Var(&c.Prune, "prune", 0, "prune this fraction of the channels after training, in [0, 1) (0.3 = 30%; 0: none)")
	fs.Float64Var(&c.MemAlert, "mem-alert", 0, "with --mem-limit: save a resumable snapshot and stop when a step's peak passes this fraction of it, in (0, 1] (e.g. 0.9; 0: off)")
	fs.IntVar(&c.TP, "tp", 1, "tensor-parallel ranks, ≥ 1, in-process (cpu:0…cpu:T-1): each holds 1/T of every block's weights and of the vocabulary (heads and the vocabulary must divide by T)")
	fs.IntVar(&c.PP, "pp", 1, "pipeline stages, ≥ 1 and ≤ the layers, in-process (cpu:0…cpu:P-1): each holds its contiguous blocks; --accum micro-batches flow through them")
	fs.BoolVar(&c.SequenceParallel, "sequence-parallel", false, "with --tp: the LayerNorm, dropout and residual regions split by token rows too (activations /T; batch × context must divide by T)")
	fs.StringVar(&c.PipeSchedule, "pipe-schedule", "1f1b", "with --pp: 1f1b (at most P−s micro-batches alive on stage s) or gpipe (all --accum of them)")
	c.registerView(fs)
	c.registerActivation(fs)
	c.registerStep(fs)
	fs.StringVar(&c.MemLog, "mem-log", "", "write one JSON line of memory per step to this file (its folder must exist and be writable)")
}

// OptionalValue lists the flags that may be given without a value, with
// the value they then take: "--amp" means "--amp=bf16", "--checkpoint"
// means "--checkpoint=sqrt".
var OptionalValue = map[string]string{"amp": "bf16", "checkpoint": "sqrt"}

// NormalizeArgs rewrites command-line arguments so that the flags of
// OptionalValue work with a space-separated value ("--amp fp16"), with an
// equals sign, or alone ("--amp"). The word after such a flag is its value
// when accept says so (accept sees every following word, "-1" included).
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
		if i+1 < len(args) && accept[name] != nil && accept[name](args[i+1]) {
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
	if err != nil || n <= 0 {
		return 0, Usagef("--mem-limit %s: want a positive size such as 2GiB, 512MiB or 80GB", c.MemLimit)
	}
	return n, nil
}

// Values returns every flag of the set with its value, for reports.
func (c *Common) Values() map[string]string {
	m := map[string]string{}
	c.fs.VisitAll(func(f *flag.Flag) { m[f.Name] = f.Value.String() })
	return m
}

// Micro returns the micro-batch of one rank: --batch split over the
// data-parallel ranks (DataRanks), then into --accum micro-batches.
func (c *Common) Micro() int { return c.Batch / c.DataRanks() / max(c.Accum, 1) }

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
	return 0, Usagef("--epochs %d: the training data holds no full step of --batch %d: want more epochs, a smaller --batch or --steps", c.Epochs, c.Batch)
}

// End returns the step the run stops after: steps, or --stop-after when
// it comes first.
func (c *Common) End(steps int) int {
	if c.StopAfter > 0 && c.StopAfter < steps {
		return c.StopAfter
	}
	return steps
}
