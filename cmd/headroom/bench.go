package main

import (
	"fmt"
	"github.com/headroom-ml/headroom/train"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/headroom-ml/headroom/bench"
)

const benchSynopsis = `bench [--quick] [--json] [--out DIR] [--torch] [--models resnet,transformer] [--techniques LIST] [--steps N]
       [--device cpu|cuda]

Runs every memory technique for real on the CPU (--device cuda: on the
GPU), for the ResNet (SmallResNet on MNIST) and the Transformer (the byte-level GPT of examples/transformer on
Go's fmt sources): plan.Measure runs the training step on the devices (peak
bytes by tag, the step's memory timeline and time) and the example program
trains it on real data (final loss and evaluation), each against the plain
run. Writes bench.json, bench.md and PNG charts into --out. --quick takes
about a minute on 2 cores. --torch also runs scripts/bench_torch.py (when
python3 imports torch) and prints both side by side.`

func cmdBench(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("bench")
	quick := fs.Bool("quick", false, "the quick bench: smaller batches, 8 training steps per run (about a minute on 2 cores)")
	tiny := fs.Bool("tiny", false, "the smallest bench (batches of 4, 2 steps): a smoke test")
	asJSON := fs.Bool("json", false, "print the result as JSON (bench.json's content) instead of the Markdown table")
	out := fs.String("out", "headroom-bench", "folder for bench.json, bench.md and the PNG charts")
	torch := fs.Bool("torch", false, "also run the PyTorch script (scripts/bench_torch.py) when python3 imports torch")
	script := fs.String("torch-script", "", "path of bench_torch.py (default: scripts/bench_torch.py of the repository holding the working directory)")
	models := fs.String("models", "resnet,transformer", "models to bench, comma-separated")
	techs := fs.String("techniques", "", "techniques to bench, comma-separated (default: all): "+strings.Join(techniqueNames(), ", "))
	steps := fs.Int("steps", 0, "training steps of each loss run (0: the mode's; -1: no loss run)")
	mnist := fs.String("mnist", "", "folder of the MNIST files (default: the Go module cache's copy)")
	corpus := fs.String("corpus", "", "the transformer's text, a file or folder (default: $GOROOT/src/fmt)")
	dev := fs.String("device", "cpu", "where every run trains: cpu or cuda (cuda:0; cuda:1 too for the 2-rank techniques; exit status 69 without a GPU)")
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
	c := bench.Config{Models: list(*models), Steps: *steps, MNIST: *mnist, Corpus: *corpus, Log: stderr, Device: *dev}
	switch {
	case *quick && *tiny:
		return train.Usagef("--quick and --tiny: choose one")
	case *quick:
		c.Mode = bench.Quick
	case *tiny:
		c.Mode = bench.Tiny
	}
	for _, m := range c.Models {
		if m != "resnet" && m != "transformer" {
			return train.Usagef("--models: unknown model %q (want resnet or transformer)", m)
		}
	}
	if *steps < -1 {
		return train.Usagef("--steps %d: want ≥ 1, 0 (the mode's) or -1 (no loss run)", *steps)
	}
	if c.Techniques, err = bench.Select(list(*techs)); err != nil {
		return train.Usagef("--techniques: %s", strings.TrimPrefix(err.Error(), "bench: "))
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
	res, err := bench.Run(c)
	if err != nil {
		return err
	}
	if python != "" {
		fmt.Fprintf(stderr, "running %s %s…\n", python, *script)
		if res.Torch, err = bench.RunTorch(python, *script, c); err != nil {
			return err
		}
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
