package train_test

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"strings"
	"testing"

	"github.com/headroom-ml/headroom/device"
	"github.com/headroom-ml/headroom/train"
)

// TestExitCode: each kind of error, wrapped as the programs wrap them,
// gets its documented status, and none is 2 (Go's runtime's).
func TestExitCode(t *testing.T) {
	oom := &device.OOMError{Device: "cpu:0", Requested: 1 << 20, Capacity: 1 << 20}
	for _, tc := range []struct {
		err  error
		code int
	}{
		{nil, 0},
		{flag.ErrHelp, 0},
		{errors.New("cannot read the data"), 1},
		{fmt.Errorf("step 3: %w", oom), 3},
		{fmt.Errorf("stopped: %w", &train.Alert{Step: 2, Peak: 10, Capacity: 10, Threshold: 0.9}), 4},
		{train.Usagef("--lr %v: want a positive, finite learning rate", -1), 64},
		{fmt.Errorf("parse: %w", train.Usage(errors.New("--batch 0: want ≥ 1"))), 64},
		{&train.DeviceError{Name: "cuda", Err: errors.New("no CUDA: libcuda.so.1 not found")}, 69},
	} {
		var w bytes.Buffer
		code := train.ExitCode(&w, "prog", tc.err)
		if code != tc.code || (tc.code != 0) != strings.HasPrefix(w.String(), "prog: ") {
			t.Errorf("ExitCode(%v) = %d, printed %q; want %d and the error printed after \"prog: \" unless 0", tc.err, code, w.String(), tc.code)
		}
	}
}

// ExampleUsagef shows a program's bad flag becoming exit status 64.
func ExampleUsagef() {
	var stderr bytes.Buffer
	err := train.Usagef("--prune %v: want a fraction of the channels in [0, 1)", 1.5)
	code := train.ExitCode(&stderr, "resnet", err)
	fmt.Print(stderr.String())
	fmt.Println("exit status", code)
	// Output:
	// resnet: --prune 1.5: want a fraction of the channels in [0, 1)
	// exit status 64
}
