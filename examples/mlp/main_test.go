package main

import (
	"errors"
	"io"
	"os"
	"strings"
	"testing"

	"github.com/headroom-ml/headroom/device"
	"github.com/headroom-ml/headroom/train"
)

// TestREADMEHoldsTheProgram: README.md's "A complete program" shows this
// program's main.go, whole and unchanged.
func TestREADMEHoldsTheProgram(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	prog, err := os.ReadFile("main.go")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(readme), "```go\n"+string(prog)+"```\n") {
		t.Error("README.md does not hold examples/mlp/main.go verbatim in a ```go block: copy the file into it")
	}
}

// TestRun: the program trains, and its failures come back as errors: bad
// flags before any work, an out-of-memory as a *device.OOMError.
func TestRun(t *testing.T) {
	var out strings.Builder
	if err := run(&out, "cpu", 3, 16, 0.02); err != nil || !strings.Contains(out.String(), "held-out accuracy") {
		t.Errorf("run(3, 16, 0.02) = %v, printing\n%s", err, out.String())
	}
	var ue *train.UsageError
	if err := run(io.Discard, "cpu", 0, 16, 0.02); !errors.As(err, &ue) || !strings.Contains(err.Error(), "--steps 0") {
		t.Errorf("run(0, 16, 0.02) = %v, want a usage error naming --steps 0", err)
	}
	var oom *device.OOMError
	if err := run(io.Discard, "cpu", 1, 100000, 0.02); !errors.As(err, &oom) {
		t.Errorf("run(1, 100000, 0.02) = %v, want a *device.OOMError", err)
	}
	if err := run(io.Discard, "tpu", 1, 16, 0.02); !errors.As(err, &ue) || !strings.Contains(err.Error(), "--device tpu") {
		t.Errorf("run(--device tpu) = %v, want a usage error naming --device tpu", err)
	}
	t.Setenv("HEADROOM_LIBCUDA", t.TempDir()+"/missing.so")
	var de *train.DeviceError
	if err := run(io.Discard, "cuda", 1, 16, 0.02); !errors.As(err, &de) || train.ExitCode(io.Discard, "mlp", err) != train.ExitUnavailable {
		t.Errorf("run(--device cuda) with no driver = %v, want a *train.DeviceError (exit %d)", err, train.ExitUnavailable)
	}
}
