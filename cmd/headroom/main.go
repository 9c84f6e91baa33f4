package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/headroom-ml/headroom/device"
)

func main() { os.Exit(run(os.Args[1:], os.Stdout, os.Stderr)) }

// The exit statuses every program of the project uses (Go's runtime
// exits with 2 on a panic: 2 means a bug).
const (
	exitError = 1  // same as train.ExitError (h3)
	exitOOM   = 3  // same as train.ExitOOM (h3)
	exitUsage = 64 // same as train.ExitUsage (h3)
)

// usageError is bad input: exit status exitUsage.
type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg }

func usagef(format string, a ...any) error { return usageError{fmt.Sprintf(format, a...)} }

const usage = `usage: headroom COMMAND [flags]

Commands:
  plan      predict a training step's exact memory per rank, before it runs
  fit       find the largest batch and the cheapest techniques that fit a capacity
  bench     run every technique for real on the CPU: memory, time, loss; JSON, Markdown, PNG charts
  summary   explain a saved run report (--report), timeline or bench.json

Run 'headroom COMMAND --help' for a command's flags.
`

// command returns the function of a subcommand (nil: none).
func command(name string) func(args []string, stdout, stderr io.Writer) error {
	switch name {
	case "plan":
		return cmdPlan
	case "fit":
		return cmdFit
	case "bench":
		return cmdBench
	case "summary":
		return cmdSummary
	}
	return nil
}

// run runs the command line args and returns the exit status: 0, or
// exitUsage for bad usage, exitOOM when the work failed because a device
// ran out of memory (the error, printed to stderr, is the whole
// *device.OOMError explanation; plan predicting that a step does not fit
// is an answer, not a failure), exitError for any other failure.
func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return exitUsage
	}
	switch args[0] {
	case "-h", "-help", "--help", "help":
		fmt.Fprint(stdout, usage)
		return 0
	}
	cmd := command(args[0])
	if cmd == nil {
		fmt.Fprintf(stderr, "headroom: unknown command %q\n\n%s", args[0], usage)
		return exitUsage
	}
	err := cmd(args[1:], stdout, stderr)
	if err == nil || errors.Is(err, flag.ErrHelp) {
		return 0
	}
	fmt.Fprintf(stderr, "headroom %s: %v\n", args[0], err)
	return status(err)
}

// status is the exit status of a command's error (not nil).
func status(err error) int {
	var ue usageError
	var oom *device.OOMError
	switch {
	case errors.As(err, &ue):
		return exitUsage
	case errors.As(err, &oom):
		return exitOOM
	}
	return exitError
}

// newFlags returns a flag set whose errors are returned, not printed.
func newFlags(name string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	return fs
}

// parse parses args with fs, flags and positional arguments in any
// order. -h and --help print the synopsis and the flags to stdout and
// return flag.ErrHelp; a bad flag is a usage error.
func parse(fs *flag.FlagSet, synopsis string, args []string, stdout io.Writer) ([]string, error) {
	for _, a := range args {
		if a == "-h" || a == "-help" || a == "--help" {
			fmt.Fprintf(stdout, "usage: headroom %s\n\nFlags:\n", synopsis)
			fs.SetOutput(stdout)
			fs.PrintDefaults()
			fs.SetOutput(io.Discard)
			return nil, flag.ErrHelp
		}
	}
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, usageError{err.Error()}
		}
		if fs.NArg() == 0 {
			return pos, nil
		}
		pos = append(pos, fs.Arg(0))
		args = fs.Args()[1:]
	}
}

// list splits a comma-separated flag value.
func list(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}
