package train

import (
	"errors"
	"flag"
	"fmt"
	"io"

	"github.com/headroom-ml/headroom/device"
)

// The exit statuses of headroom's programs (the examples and cmd/headroom).
// Go's runtime exits with status 2 on a panic or a fatal error, so 2 is
// left to mean "a bug": no program returns it on purpose.
const (
	// ExitOK: the run succeeded (or --help was asked for).
	ExitOK = 0
	// ExitError: the run failed (a file that cannot be read, a
	// non-finite loss, a snapshot that does not fit the model, …).
	ExitError = 1
	// ExitOOM: a device ran out of memory; stderr holds the whole
	// *device.OOMError explanation (what was live, by tag and creator).
	ExitOOM = 3
	// ExitAlert: a memory alert (--mem-alert) stopped the run after
	// saving a resumable snapshot.
	ExitAlert = 4
	// ExitUsage: a bad flag or argument, refused before any work
	// started (BSD's EX_USAGE).
	ExitUsage = 64
	// ExitUnavailable: the device asked for (--device cuda) cannot be
	// opened — no GPU, no driver, a CUDA library missing; stderr names
	// what is missing (sysexits' EX_UNAVAILABLE).
	ExitUnavailable = 69
)

// UsageError is bad input to a program: a flag or an argument out of its
// range, unknown, or in a combination that cannot work. ExitCode maps it
// to ExitUsage.
type UsageError struct{ Err error }

func (e *UsageError) Error() string { return e.Err.Error() }

// Unwrap returns the underlying error.
func (e *UsageError) Unwrap() error { return e.Err }

// Usagef returns a *UsageError with the formatted message (%w wraps).
func Usagef(format string, a ...any) error {
	return &UsageError{fmt.Errorf(format, a...)}
}

// Usage returns err as a *UsageError (nil stays nil; a *UsageError, or an
// error wrapping flag.ErrHelp, is returned as it is).
func Usage(err error) error {
	var ue *UsageError
	if err == nil || errors.As(err, &ue) || errors.Is(err, flag.ErrHelp) {
		return err
	}
	return &UsageError{err}
}

// ExitCode prints err for a program named prog and returns the exit status
// to use: ExitOK for nil and for flag.ErrHelp (the usage is printed
// already), ExitOOM for an out-of-memory error (printed with its whole
// explanation), ExitAlert for a memory alert that stopped the run,
// ExitUsage for a *UsageError, ExitUnavailable for a *DeviceError,
// ExitError otherwise. Programs end with
// os.Exit(train.ExitCode(…)).
func ExitCode(w io.Writer, prog string, err error) int {
	if err == nil || errors.Is(err, flag.ErrHelp) {
		return ExitOK
	}
	fmt.Fprintf(w, "%s: %v\n", prog, err)
	var oom *device.OOMError
	var alert *Alert
	var usage *UsageError
	var unavailable *DeviceError
	switch {
	case errors.As(err, &oom):
		return ExitOOM
	case errors.As(err, &alert):
		return ExitAlert
	case errors.As(err, &usage):
		return ExitUsage
	case errors.As(err, &unavailable):
		return ExitUnavailable
	}
	return ExitError
}

// Main is a training program's main: it reads args with parse (which
// returns a *UsageError for a bad flag), runs the configuration with run
// and returns the exit status of ExitCode, the error printed to stderr as
// "prog: …".
//
//	func main() { os.Exit(train.Main("resnet", os.Args[1:], os.Stdout, os.Stderr, run.Parse, run.Train)) }
func Main[C any](prog string, args []string, stdout, stderr io.Writer,
	parse func([]string, io.Writer) (C, error), run func(C, io.Writer) (*Report, error)) int {
	c, err := parse(args, stderr)
	if err != nil {
		return ExitCode(stderr, prog, err)
	}
	_, err = run(c, stdout)
	return ExitCode(stderr, prog, err)
}
