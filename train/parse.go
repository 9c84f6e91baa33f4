package train

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
)

// ParseOptions is what a program tells Common.Parse about itself.
type ParseOptions struct {
	// Usage is printed before the flags by -help.
	Usage string
	// Supported lists the technique flags the program implements.
	Supported []string
	// AfterFlags are the program's flags that change only what follows
	// training (evaluation, samples): a snapshot stores them and a
	// resumed run takes them when they are not given, but they may change
	// without --override.
	AfterFlags []string
	// Check checks the program's own flags after the common ones; its
	// errors are usage errors.
	Check func() error
}

// invocationFlags belong to one invocation, not to the run: a snapshot
// does not store them and a resumed run does not take them from it (the
// machine's memory, where files go, when to stop; checkpointing changes
// memory, not one bit of the result).
var invocationFlags = map[string]bool{"report": true, "save": true, "resume": true, "override": true, "stop-after": true,
	"mem-log": true, "mem-limit": true, "mem-alert": true, "device": true, "mpi": true, "checkpoint": true, "checkpoint-budget": true, "selective": true, "selective-lean": true,
	"offload-activations": true, "activation-budget": true, "flop-rate": true, "memory-rate": true, "copy-rate": true}

// afterFlags are the common flags that change only what follows training.
var afterFlags = []string{"quantize", "calibrate", "qat"}

// Parse reads a program's command line into fs — the common flags, which
// Register added, and the program's — and checks it before anything runs.
// --epochs given without --steps runs epochs. With --resume, the flags not
// given take the values stored in the snapshot, and a flag that changes
// the run (any but the invocation and after-training flags) is refused,
// naming each change, unless --override is given: then the changes are
// printed to stderr as a warning. A snapshot past the run's last step is
// refused. Then Check and o.Check check every flag. Every error is a
// *UsageError, but -help's flag.ErrHelp.
func (c *Common) Parse(fs *flag.FlagSet, args []string, stderr io.Writer, o ParseOptions) error {
	fs.SetOutput(io.Discard) // errors come back; -help prints below
	fs.Usage = func() {}
	if err := fs.Parse(NormalizeArgs(args, acceptWords)); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(stderr, o.Usage)
			fs.SetOutput(stderr)
			fs.PrintDefaults()
			return err
		}
		return Usagef("%w (%s -help lists the flags)", err, fs.Name())
	}
	if fs.NArg() > 0 {
		return Usagef("unexpected arguments %q: the program takes flags only", fs.Args())
	}
	if n := ampNames[c.AMP]; n != "" {
		c.AMP = n // one spelling, for the snapshot's configuration
	}
	given := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { given[f.Name] = true })
	if given["epochs"] && !given["steps"] {
		c.Steps = 0
	}
	if given["init"] && c.Resume != "" {
		return Usagef("--init and --resume: choose one (the snapshot holds the model)")
	}
	if err := c.resumeFlags(given, append(o.AfterFlags, afterFlags...), stderr); err != nil {
		return err
	}
	if err := c.Check(o.Supported...); err != nil {
		return err
	}
	if err := c.checkResumeLayout(); err != nil {
		return err
	}
	if o.Check != nil {
		if err := o.Check(); err != nil {
			return Usage(err)
		}
	}
	if c.resumed != nil && c.Steps > 0 {
		return c.checkResumeStep(c.resumed.Step, c.Steps)
	}
	return nil
}

// Config returns the run's configuration, for its snapshot: the value of
// every flag but the invocation flags (--report, --save, --resume,
// --override, --stop-after, --mem-log, --mem-limit, --mem-alert, --device,
// --mpi, --checkpoint, --checkpoint-budget).
func (c *Common) Config() map[string]string {
	m := c.Values()
	for f := range invocationFlags {
		delete(m, f)
	}
	return m
}

// resumeFlags gives the flags that are not given the --resume snapshot's
// values and refuses changes (but those of free flags) without --override.
func (c *Common) resumeFlags(given map[string]bool, free []string, warn io.Writer) error {
	if c.Resume == "" {
		return nil
	}
	if fi, err := os.Stat(c.Resume); err != nil || fi.IsDir() {
		if err == nil {
			return Usagef("--resume %s: is a folder: want a snapshot file written by --save", c.Resume)
		}
		return Usagef("--resume %s: %w", c.Resume, errors.Unwrap(err))
	}
	snap, err := ReadSnapshotInfo(c.Resume)
	if err != nil {
		return Usagef("--resume: %w", err)
	}
	prog := c.fs.Name()
	if snap.Program != "" && snap.Program != prog {
		return Usagef("--resume %s: a snapshot of %s, not of %s", c.Resume, snap.Program, prog)
	}
	if snap.Shard != nil {
		if err := checkShards(c.Resume, snap.Shard); err != nil {
			return err
		}
	}
	c.resumed = &snap
	if snap.Config == nil {
		if !c.Override {
			return Usagef("--resume %s: the snapshot stores no run configuration (it was written before snapshots stored one), so the flags cannot be checked against it: give the run's flags and --override", c.Resume)
		}
		fmt.Fprintf(warn, "%s: warning: --resume %s: the snapshot stores no configuration: the flags are not checked against it\n", prog, c.Resume)
		return nil
	}
	length := given["steps"] || given["epochs"] // one choice: neither is taken when one is given
	for name, v := range snap.Config {
		f := c.fs.Lookup(name)
		if f == nil || given[name] || length && (name == "steps" || name == "epochs") || invocationFlags[name] || f.Value.String() == v {
			continue
		}
		if err := c.fs.Set(name, v); err != nil {
			return Usagef("--resume %s: the snapshot's --%s %s: %w", c.Resume, name, v, err)
		}
	}
	changes := c.changes(snap.Config, free)
	if len(changes) == 0 {
		return nil
	}
	if !c.Override {
		return Usagef("--resume %s: these flags change the run the snapshot was saved from:\n%s\nleave them out to continue the same run, or add --override to change it", c.Resume, changes)
	}
	fmt.Fprintf(warn, "%s: warning: --override: resuming %s with flags that change its run:\n%s\n", prog, c.Resume, changes)
	return nil
}

// changes lists, one "  --flag: A in the snapshot, B now" line each, the
// flags whose value differs from the stored configuration's (a flag it
// does not record counts with its default value), but the invocation
// flags and free.
func (c *Common) changes(stored map[string]string, free []string) string {
	skip := map[string]bool{}
	for _, f := range free {
		skip[f] = true
	}
	show := func(v string) string {
		if v == "" {
			return `""`
		}
		return v
	}
	var lines []string
	c.fs.VisitAll(func(f *flag.Flag) {
		v, ok := stored[f.Name]
		if !ok {
			v = f.DefValue
		}
		if now := f.Value.String(); !skip[f.Name] && !invocationFlags[f.Name] && v != now {
			lines = append(lines, fmt.Sprintf("  --%s: %s in the snapshot, %s now", f.Name, show(v), show(now)))
		}
	})
	for name, v := range stored {
		if c.fs.Lookup(name) == nil && !skip[name] && !invocationFlags[name] {
			lines = append(lines, fmt.Sprintf("  --%s: %s in the snapshot, not a flag of this version", name, show(v)))
		}
	}
	sort.Strings(lines)
	return strings.Join(lines, "\n")
}

// checkResumeStep refuses a --resume snapshot at step past the run's last
// step (steps steps, or --stop-after); one at the last step resumes a
// finished run to evaluate (or quantize) it, with no step to train.
func (c *Common) checkResumeStep(step, steps int) error {
	end := c.End(steps)
	switch {
	case step <= end:
		return nil
	case end < steps:
		return Usagef("--resume %s: the snapshot is at step %d, past --stop-after %d", c.Resume, step, c.StopAfter)
	}
	return Usagef("--resume %s: the snapshot is at step %d, past this run's last step %d: want a run of at least %d steps (with --override)", c.Resume, step, steps, step)
}
