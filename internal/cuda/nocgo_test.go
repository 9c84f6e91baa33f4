package cuda

import (
	"os"
	"os/exec"
	"testing"
)

// TestBuildsWithoutCgo: the bindings and the cuda device build with
// CGO_ENABLED=0 (purego only), so one binary runs with or without CUDA.
func TestBuildsWithoutCgo(t *testing.T) {
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go tool in PATH")
	}
	cmd := exec.Command(gobin, "build", "-o", os.DevNull, "github.com/headroom-ml/headroom/device/cuda")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("CGO_ENABLED=0 go build device/cuda: %v\n%s", err, out)
	}
}
