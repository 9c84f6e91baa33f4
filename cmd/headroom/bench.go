package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"syscall"

	"github.com/headroom-ml/headroom/bench"
	"github.com/headroom-ml/headroom/device/cpu"
	"github.com/headroom-ml/headroom/train"
)

const benchSynopsis = `bench [--quick] [--json] [--out DIR] [--torch] [--models resnet,transformer,resnet18,resnet50,resnet18-64,resnet50-64,gpt6x256]
       [--techniques LIST] [--steps N] [--device cpu|cuda] [--threads N] [--warmup N] [--timed N] [--rounds N] [--isa native|avx2]

Runs every memory technique for real on the CPU (--device cuda: on the
GPU), for the ResNet (SmallResNet on MNIST) and the Transformer (the byte-level GPT of examples/transformer on
Go's fmt sources): plan.Measure runs the training step on the devices (peak
bytes by tag, the step's memory timeline and time) and the example program
trains it on real data (final loss and evaluation), each against the plain
run. Writes bench.json, bench.md and PNG charts into --out. --quick takes
about a minute on 2 cores. --torch also runs scripts/bench_torch.py (when
python3 imports torch) and prints both side by side, at the same thread
count (--threads, default GOMAXPROCS), each row's time the median of
--timed steps after --warmup untimed ones on both sides. It first checks
PyTorch's BLAS and refuses a PyTorch that loaded the reference (netlib)
BLAS. --rounds N (speed models only, with --torch) runs both sides N
times, alternating which goes first, and reports each side's median of
its rounds' medians and the median of the rounds' ratios, with every
round's ratio beneath the table: a drift of the machine's speed over
minutes then favours neither side. resnet18, resnet50 (small stem, 3×32×32, batch 32, Adam), resnet18-64,
resnet50-64 (the same on 3×64×64) and gpt6x256 (6 layers × 256, context
256, batch 16, AdamW) are speed-only models: F32 and BF16 autocast on
synthetic data, no loss run. --isa avx2 runs both sides on their AVX2
kernels on an AVX-512 CPU, a proxy for an AVX2-only one: headroom restarts
itself under GODEBUG=cpu.avx512f=off, PyTorch runs under
ONEDNN_MAX_CPU_ISA=AVX2, ATEN_CPU_CAPABILITY=avx2 and
OPENBLAS_CORETYPE=Haswell, and the table prints both sides' kernel paths.`

func cmdBench(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("bench")
	quick := fs.Bool("quick", false, "the quick bench: smaller batches, 8 training steps per run (about a minute on 2 cores)")
	tiny := fs.Bool("tiny", false, "the smallest bench (batches of 4, 2 steps): a smoke test")
	asJSON := fs.Bool("json", false, "print the result as JSON (bench.json's content) instead of the Markdown table")
	out := fs.String("out", "headroom-bench", "folder for bench.json, bench.md and the PNG charts")
	torch := fs.Bool("torch", false, "also run the PyTorch script (scripts/bench_torch.py) when python3 imports torch")
	script := fs.String("torch-script", "", "path of bench_torch.py (default: scripts/bench_torch.py of the repository holding the working directory)")
	models := fs.String("models", "resnet,transformer", "models to bench, comma-separated: resnet, transformer (loss runs) and the speed models "+strings.Join(bench.SpeedModels(), ", "))
	threads := fs.Int("threads", 0, "threads of both headroom (GOMAXPROCS) and PyTorch (0: GOMAXPROCS)")
	warmup := fs.Int("warmup", 2, "untimed steps before the timed ones, both sides (≥ 2)")
	timed := fs.Int("timed", 5, "timed steps whose median is a row's time, both sides (≥ 5; with --torch or speed models)")
	techs := fs.String("techniques", "", "techniques to bench, comma-separated (default: all; they also choose the speed models' rows and PyTorch's under --torch: plain times F32 only): "+strings.Join(techniqueNames(), ", "))
	rounds := fs.Int("rounds", 1, "with --torch and speed models only: rounds of both sides, the side that runs first alternating (≥ 1)")
	steps := fs.Int("steps", 0, "training steps of each loss run (0: the mode's; -1: no loss run)")
	mnist := fs.String("mnist", "", "folder of the MNIST files (default: the Go module cache's copy)")
	corpus := fs.String("corpus", "", "the transformer's text, a file or folder (default: $GOROOT/src/fmt)")
	dev := fs.String("device", "cpu", "where every run trains: cpu or cuda (cuda:0; cuda:1 too for the 2-rank techniques; exit status 69 without a GPU)")
	isa := fs.String("isa", "native", "kernels of both sides: native (the CPU's widest) or avx2 (AVX2 only on both sides, a proxy for an AVX2-only CPU)")
	pos, err := parse(fs, benchSynopsis, args, stdout)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return train.Usagef("unexpected arguments %q", pos)
	}
	if *dev != "cpu" && *dev != "cuda" {
		return train.Usagef("--device %s: want cpu or cuda", *dev)
	}
	c := bench.Config{Steps: *steps, MNIST: *mnist, Corpus: *corpus, Log: stderr, Device: *dev, Threads: *threads}
	if err := benchTiming(&c, *torch, *warmup, *timed, list(*models)); err != nil {
		return err
	}
	switch {
	case *quick && *tiny:
		return train.Usagef("--quick and --tiny: choose one")
	case *quick:
		c.Mode = bench.Quick
	case *tiny:
		c.Mode = bench.Tiny
	}
	if *steps < -1 {
		return train.Usagef("--steps %d: want ≥ 1, 0 (the mode's) or -1 (no loss run)", *steps)
	}
	if c.Techniques, err = bench.Select(list(*techs)); err != nil {
		return train.Usagef("--techniques: %s", strings.TrimPrefix(err.Error(), "bench: "))
	}
	if c.ISA, err = benchISA(*isa); err != nil {
		return err
	}
	python := ""
	if *torch {
		if python = bench.FindPython(); python == "" {
			fmt.Fprintln(stderr, "headroom bench: --torch: python3 cannot import torch (install Debian's python3-torch); running headroom alone")
		} else if *script == "" {
			if *script, err = findScript(); err != nil {
				return err
			}
		}
	}
	if python != "" {
		env, err := bench.ProbeTorch(python, *script, c)
		if err != nil {
			return err
		}
		if err := env.Check(runtime.GOMAXPROCS(0)); err != nil {
			return err
		}
		fmt.Fprintf(stderr, "PyTorch %s, oneDNN %s (%s), ATen %s, BLAS %s (OpenBLAS core %q), %d threads; headroom kernels %s, %d threads; %s\n", env.Torch,
			env.OneDNN, env.OneDNNISA, env.ATenCapability, env.BLAS(), env.OpenBLASCore, env.Threads, cpu.KernelPath(), runtime.GOMAXPROCS(0), bench.CPUModel())
	}
	if err := checkRounds(*rounds, python, c); err != nil {
		return err
	}
	res, err := benchRounds(c, python, *script, *rounds, stderr)
	if err != nil {
		return err
	}
	paths, err := res.Write(*out)
	if err != nil {
		return err
	}
	if *asJSON {
		return writeJSON(stdout, res)
	}
	fmt.Fprint(stdout, res.Markdown())
	fmt.Fprintf(stdout, "\n%s bench in %.0f s; wrote %s\n", res.Mode, res.Seconds, strings.Join(paths, ", "))
	return nil
}

// checkRounds refuses --rounds below 1, and above 1 without PyTorch or
// with a loss model (whose rows are not merged).
func checkRounds(rounds int, python string, c bench.Config) error {
	switch {
	case rounds < 1:
		return train.Usagef("--rounds %d: want ≥ 1", rounds)
	case rounds > 1 && python == "":
		return train.Usagef("--rounds %d: needs --torch and a python3 that imports torch", rounds)
	case rounds > 1 && len(c.Models) > 0:
		return train.Usagef("--rounds %d with --models %s: rounds take the speed models only (%s)", rounds, strings.Join(c.Models, ","), strings.Join(bench.SpeedModels(), ", "))
	}
	return nil
}

// benchRounds runs headroom's bench and, with python, PyTorch's script:
// once, or rounds times with the side that runs first alternating, merged
// (bench.MergeRounds).
func benchRounds(c bench.Config, python, script string, rounds int, stderr io.Writer) (*bench.Result, error) {
	var all []*bench.Result
	for i := range rounds {
		var res *bench.Result
		var torch *bench.TorchResult
		sides := []func() error{
			func() (err error) { res, err = bench.Run(c); return err },
			func() (err error) {
				if python == "" {
					return nil
				}
				fmt.Fprintf(stderr, "running %s %s…\n", python, script)
				torch, err = bench.RunTorch(python, script, c)
				return err
			},
		}
		if i%2 == 1 {
			sides[0], sides[1] = sides[1], sides[0]
		}
		if rounds > 1 {
			fmt.Fprintf(stderr, "round %d of %d\n", i+1, rounds)
		}
		for _, side := range sides {
			if err := side(); err != nil {
				return nil, err
			}
		}
		res.Torch = torch
		all = append(all, res)
	}
	if rounds == 1 {
		return all[0], nil
	}
	return bench.MergeRounds(all)
}

// benchTiming sorts --models into loss and speed models and sets the
// threads (GOMAXPROCS, before any work) and the timing: with --torch or a
// speed model, every compared row is the median of --timed steps after
// --warmup.
func benchTiming(c *bench.Config, torch bool, warmup, timed int, models []string) error {
	for _, m := range models {
		switch {
		case m == "resnet" || m == "transformer":
			c.Models = append(c.Models, m)
		case slices.Contains(bench.SpeedModels(), m):
			c.Speed = append(c.Speed, m)
		default:
			return train.Usagef("--models: unknown model %q (want resnet, transformer or one of %s)", m, strings.Join(bench.SpeedModels(), ", "))
		}
	}
	if len(models) == 0 {
		return train.Usagef("--models: none given")
	}
	if warmup < 2 || timed < 5 {
		return train.Usagef("--warmup %d --timed %d: want ≥ 2 warm-up and ≥ 5 timed steps", warmup, timed)
	}
	if c.Threads < 0 {
		return train.Usagef("--threads %d: want ≥ 1 (0: GOMAXPROCS)", c.Threads)
	}
	if c.Threads > 0 {
		runtime.GOMAXPROCS(c.Threads)
	}
	c.Warmup = warmup
	if torch || len(c.Speed) > 0 {
		c.Timed = timed
	}
	return nil
}

// benchISA checks --isa and, for avx2 on a CPU whose kernels run wider
// than AVX2, restarts the process under GODEBUG=cpu.avx512f=off (the
// kernels choose their path once, at start-up), which does not return
// when it succeeds. It returns the ISA for bench.Config.
func benchISA(isa string) (string, error) {
	if !slices.Contains(bench.ISAs(), isa) {
		return "", train.Usagef("--isa %s: want one of %s", isa, strings.Join(bench.ISAs(), ", "))
	}
	if isa == "avx2" && strings.HasPrefix(cpu.KernelPath(), "avx512") {
		env, added := bench.WithGodebug(os.Environ(), bench.ISAGodebug)
		if !added {
			return "", fmt.Errorf("--isa avx2: GODEBUG has %s, yet the kernels run %s", bench.ISAGodebug, cpu.KernelPath())
		}
		if err := restart(env); err != nil {
			return "", fmt.Errorf("--isa avx2: restarting under GODEBUG=%s: %w (set it yourself and run again)", bench.ISAGodebug, err)
		}
	}
	return isa, bench.CheckISA(isa)
}

// restart replaces the process with a new run of the same program and
// arguments in environment env (a variable for the tests).
var restart = func(env []string) error {
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	return syscall.Exec(exe, os.Args, env)
}

func techniqueNames() []string {
	var ns []string
	for _, t := range bench.Techniques() {
		ns = append(ns, t.Name)
	}
	return ns
}

// findScript finds scripts/bench_torch.py in the working directory or a
// folder above it.
func findScript() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		p := filepath.Join(dir, "scripts", "bench_torch.py")
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
		up := filepath.Dir(dir)
		if up == dir {
			return "", train.Usagef("--torch: scripts/bench_torch.py not found above the working directory: give --torch-script")
		}
		dir = up
	}
}
