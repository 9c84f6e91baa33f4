package train

import (
	"errors"
	"fmt"
	"io"

	"github.com/headroom-ml/headroom/device"
)

// ExitCode prints err for a program named prog and returns the exit status
// to use: 0 for nil, 2 for an out-of-memory error (printed with its whole
// explanation), 3 for a memory alert that stopped the run (--mem-alert),
// 1 otherwise. Programs end with os.Exit(train.ExitCode(…)).
func ExitCode(w io.Writer, prog string, err error) int {
	if err == nil {
		return 0
	}
	fmt.Fprintf(w, "%s: %v\n", prog, err)
	var oom *device.OOMError
	var alert *Alert
	switch {
	case errors.As(err, &oom):
		return 2
	case errors.As(err, &alert):
		return 3
	}
	return 1
}
