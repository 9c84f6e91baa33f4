package train

import (
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// techniqueFlags are the flags that turn on a technique.
var techniqueFlags = []string{"amp", "amp-params", "grad-f32", "checkpoint", "checkpoint-budget", "selective", "selective-lean", "offload-activations", "activation-budget", "fused-loss", "accum", "ranks", "zero", "offload", "quantize", "calibrate", "qat", "prune", "mem-alert", "tp", "pp", "sequence-parallel", "pipe-schedule", "step-in-backward"}

// Check checks every common flag before anything runs: the technique
// flags the example does not support (supported lists those it does) are
// refused as "not available yet", each value must be in its range, the
// combinations must work, the files to read must exist and the folders to
// write into must be writable (tried with a temporary file, removed at
// once). Its errors are *UsageError values naming the flag, its value and
// what is expected.
func (c *Common) Check(supported ...string) error {
	for _, check := range []func() error{
		func() error { return c.checkSupported(supported) },
		c.checkLength, c.checkPrecision, c.checkMemory, c.checkAfter, c.CheckSplit, c.CheckParallel, c.checkStep, c.checkBudget, c.checkFiles, c.checkView,
	} {
		if err := check(); err != nil {
			return Usage(err)
		}
	}
	return nil
}

// Want returns nil when ok, else a *UsageError "--flag value: want …".
func Want(ok bool, flag string, value any, want string) error {
	if ok {
		return nil
	}
	return Usagef("--%s %v: want %s", flag, value, want)
}

// First returns the first error that is not nil (nil if none).
func First(errs ...error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// Finite reports whether x is a number other than ±Inf.
func Finite(x float64) bool { return !math.IsNaN(x) && !math.IsInf(x, 0) }

// checkSupported refuses a --device that does not parse, more
// data-parallel ranks than GPUs, and the technique flags that are not in
// supported.
func (c *Common) checkSupported(supported []string) error {
	kind, index, err := ParseDevice(c.Device)
	if err != nil {
		return err
	}
	if kind == "cuda" && c.Parallel() {
		if err := c.checkGPUs(index); err != nil {
			return err
		}
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
	return nil
}

// checkLength checks the run's length, batch and learning rate.
func (c *Common) checkLength() error {
	if err := First(
		Want(c.Batch >= 1, "batch", c.Batch, "a batch size ≥ 1"),
		Want(c.Steps >= 0, "steps", c.Steps, "≥ 0 optimizer steps (0: run --epochs)"),
		Want(c.Epochs >= 0, "epochs", c.Epochs, "≥ 0 passes over the data"),
		Want(c.Steps > 0 || c.Epochs > 0, "steps", c.Steps, "a positive number of steps, or of --epochs"),
		Want(c.Accum >= 1, "accum", c.Accum, "≥ 1 micro-batches per step"),
		Want(c.LR > 0 && Finite(c.LR), "lr", c.LR, "a positive, finite learning rate"),
		Want(c.StopAfter >= 0, "stop-after", c.StopAfter, "a step ≥ 0 (0: run to the end)"),
	); err != nil {
		return err
	}
	if c.Steps > 0 && c.Epochs > 0 && c.Set("steps") && c.Set("epochs") {
		return fmt.Errorf("--steps %d and --epochs %d: choose one", c.Steps, c.Epochs)
	}
	return nil
}

// checkPrecision checks --amp, --amp-params and the checkpointing flags.
func (c *Common) checkPrecision() error {
	if _, err := c.AMPDType(); err != nil {
		return err
	}
	if c.GradF32 && !c.AMPParams {
		return Usagef("--grad-f32 needs --amp-params (without it the parameters, and so their gradients, are f32 already)")
	}
	_, _, err := c.RunBlocks()
	return err
}

// checkMemory checks --mem-limit and --mem-alert.
func (c *Common) checkMemory() error {
	if _, err := c.Capacity(); err != nil {
		return err
	}
	if err := Want(c.MemAlert >= 0 && c.MemAlert <= 1, "mem-alert", c.MemAlert, "a fraction of --mem-limit in (0, 1] (0: off)"); err != nil {
		return err
	}
	if c.MemAlert > 0 && c.MemLimit == "" {
		return fmt.Errorf("--mem-alert %v needs --mem-limit (a fraction of what capacity?)", c.MemAlert)
	}
	return nil
}

// checkAfter checks what runs after training: --quantize, --calibrate,
// --qat and --prune.
func (c *Common) checkAfter() error {
	if err := First(
		Want(c.Quantize == "" || c.Quantize == "int8", "quantize", c.Quantize, "int8"),
		Want(c.Calibrate >= 0, "calibrate", c.Calibrate, "≥ 0 calibration batches (0: dynamic quantization)"),
		Want(c.Prune >= 0 && c.Prune < 1, "prune", c.Prune, "a fraction of the channels in [0, 1) (0: none)"),
	); err != nil {
		return err
	}
	switch {
	case (c.Calibrate != 0 || c.QAT) && c.Quantize == "":
		return fmt.Errorf("--calibrate and --qat need --quantize int8")
	case c.Calibrate != 0 && c.QAT:
		return fmt.Errorf("--calibrate and --qat: choose one (QAT records the ranges itself)")
	case c.Quantize != "" && (c.Parallel() || c.AMPParams || c.Save != ""):
		return fmt.Errorf("--quantize: not with data parallelism, --amp-params or --save (quant.Save writes INT8 models)")
	case c.Prune != 0 && c.Zero == 3:
		return fmt.Errorf("--prune with --zero 3: pruning ranks each block's channels by the magnitudes of the whole model's weights, which no ZeRO-3 rank holds (it would have to gather the whole model): prune on one device, then train the pruned model sharded")
	case c.Prune != 0 && (c.Resume != "" || c.Save != "" || c.Parallel()):
		return fmt.Errorf("--prune: not with --resume, --save or data parallelism (the pruned shapes differ from the model a snapshot is built for)")
	}
	return nil
}

// checkFiles checks that --data, --resume and --init (when it is read: not
// with --resume) exist and that --save (every rank's shard of it), --report
// and --mem-log can be written, to different files.
func (c *Common) checkFiles() error {
	init := c.Init
	if c.Resume != "" {
		init = ""
	}
	for _, f := range []struct{ flag, path string }{{"data", c.Data}, {"resume", c.Resume}, {"init", init}} {
		if _, err := os.Stat(f.path); f.path != "" && err != nil {
			return fmt.Errorf("--%s %s: %w", f.flag, f.path, errors.Unwrap(err))
		}
	}
	seen := map[string]string{}
	for _, f := range []struct{ flag, path string }{{"save", c.Save}, {"report", c.Report}, {"mem-log", c.MemLog}, {"mem-view", c.MemView}} {
		if f.path == "" {
			continue
		}
		if err := writable(f.flag, f.path); err != nil {
			return err
		}
		p := filepath.Clean(f.path)
		if other, ok := seen[p]; ok {
			return fmt.Errorf("--%s and --%s both write %s: want different files", other, f.flag, f.path)
		}
		seen[p] = f.flag
	}
	if c.Parallel() && c.Save != "" {
		for r := 1; r < c.Ranks; r++ {
			if f := ShardPath(c.Save, r, c.Ranks); isDir(f) {
				return fmt.Errorf("--save %s: rank %d's shard %s is a folder: want a file name", c.Save, r, f)
			}
		}
	}
	return nil
}

// isDir reports whether path is a folder.
func isDir(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.IsDir()
}

// writable checks that path can be written: not a folder, in an existing
// folder where a file can be created (a temporary one, removed at once).
func writable(flag, path string) error {
	if fi, err := os.Stat(path); err == nil && fi.IsDir() {
		return fmt.Errorf("--%s %s: is a folder: want a file name", flag, path)
	}
	dir := filepath.Dir(path)
	if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
		return fmt.Errorf("--%s %s: the folder %s does not exist: want a file in an existing folder", flag, path, dir)
	}
	f, err := os.CreateTemp(dir, ".headroom-check-*")
	if err != nil {
		return fmt.Errorf("--%s %s: cannot write into the folder %s: %w", flag, path, dir, errors.Unwrap(err))
	}
	name := f.Name()
	f.Close()
	if err := os.Remove(name); err != nil {
		return fmt.Errorf("--%s %s: removing the test file: %w", flag, path, err)
	}
	return nil
}
