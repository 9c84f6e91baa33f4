package main

import (
	"flag"
	"fmt"
	"github.com/headroom-ml/headroom/train"
	"io"
	"os"
	"strings"
)

func main() { os.Exit(run(os.Args[1:], os.Stdout, os.Stderr)) }

const usage = `usage: headroom COMMAND [flags]

Commands:
  plan      predict a training step's exact memory per rank, before it runs
  fit       find the largest batch and the cheapest techniques (or, --split, the tp × pp layout) that fit a capacity
  bench     run every technique for real on the CPU (or --device cuda): memory, time, loss; JSON, Markdown, PNG charts
  summary   explain a saved run report (--report), timeline or bench.json
  view      write a memory timeline (or two, compared) as one interactive HTML page
  export    write a snapshot's model (a data-parallel run's shards merged) as one model file

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
	case "export":
		return cmdExport
	case "view":
		return cmdView
	}
	return nil
}

// run runs the command line args and returns the exit status of
// train.ExitCode: 0, ExitUsage (64) for bad usage, ExitOOM (3) when the
// work failed because a device ran out of memory (the error, printed to
// stderr, is the whole *device.OOMError explanation; plan predicting that
// a step does not fit is an answer, not a failure), ExitError (1)
// otherwise.
func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return train.ExitUsage
	}
	switch args[0] {
	case "-h", "-help", "--help", "help":
		fmt.Fprint(stdout, usage)
		return 0
	}
	cmd := command(args[0])
	if cmd == nil {
		fmt.Fprintf(stderr, "headroom: unknown command %q\n\n%s", args[0], usage)
		return train.ExitUsage
	}
	return train.ExitCode(stderr, "headroom "+args[0], cmd(args[1:], stdout, stderr))
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
			return nil, train.Usage(err)
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
