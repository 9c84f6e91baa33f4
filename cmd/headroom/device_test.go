package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/headroom-ml/headroom/train"
)

// TestPlanDeviceCUDA: plan --device cuda runs no GPU and predicts the cpu
// plan's bytes plus, in every counter that covers the whole step (the
// peak, the workspace's own peak and what it held at the peak), exactly
// the cuBLAS workspace a cuda device holds from the start — 32 MiB on the
// default compute capability 9, 4 MiB with --cuda-major 8 — and says so;
// the JSON names the device. Bad device flags are usage errors.
func TestPlanDeviceCUDA(t *testing.T) {
	base := []string{"plan", "--model", "transformer", "--batch", "4", "--seq", "16", "--amp", "bf16", "--json"}
	read := func(args ...string) planJSON {
		var p planJSON
		if err := json.Unmarshal([]byte(ok(t, append(append([]string{}, base...), args...)...)), &p); err != nil {
			t.Fatal(err)
		}
		return p
	}
	cpuPlan := read()
	if cpuPlan.Device != "cpu" || cpuPlan.ResidentBytes != 0 {
		t.Errorf("a plan without --device is for %q with %d resident bytes, want cpu and 0", cpuPlan.Device, cpuPlan.ResidentBytes)
	}
	for _, tc := range []struct {
		args  []string
		major int
		ws    int64
	}{{[]string{"--device", "cuda"}, 9, 32 << 20}, {[]string{"--device", "cuda", "--cuda-major", "8"}, 8, 4 << 20}} {
		p := read(tc.args...)
		c, r := p.Ranks[0], cpuPlan.Ranks[0]
		if p.Device != "cuda" || p.CUDAMajor != tc.major || p.ResidentBytes != tc.ws {
			t.Errorf("%v: device %q, major %d, resident %d; want cuda, %d, %d", tc.args, p.Device, p.CUDAMajor, p.ResidentBytes, tc.major, tc.ws)
		}
		if p.PeakBytes-cpuPlan.PeakBytes != tc.ws || c.Workspace-r.Workspace != tc.ws || c.AtPeak.Workspace-r.AtPeak.Workspace != tc.ws ||
			c.Activation != r.Activation || c.Parameter != r.Parameter || c.Optimizer != r.Optimizer {
			t.Errorf("%v: peak %d (workspace %d, at peak %d) vs the cpu plan's %d (%d, %d): want exactly +%d, the other tags equal",
				tc.args, p.PeakBytes, c.Workspace, c.AtPeak.Workspace, cpuPlan.PeakBytes, r.Workspace, r.AtPeak.Workspace, tc.ws)
		}
	}
	table := ok(t, "plan", "--model", "small", "--batch", "4", "--device", "cuda")
	if !strings.Contains(table, "planned for a cuda device of compute capability 9: each holds cuBLAS's workspace (32.00 MiB") {
		t.Errorf("the table does not say the device it plans for:\n%s", table)
	}
	for _, bad := range [][]string{
		{"--device", "tpu"}, {"--device", "cuda:0"}, {"--cuda-major", "8"}, {"--device", "cuda", "--cuda-major", "-1"},
	} {
		code, _, errs := call(append([]string{"plan", "--model", "small"}, bad...)...)
		if code != train.ExitUsage || !strings.Contains(errs, bad[len(bad)-2]) {
			t.Errorf("plan %v: exit %d, %q; want %d naming %s", bad, code, errs, train.ExitUsage, bad[len(bad)-2])
		}
	}
}

// TestCUDAWithoutDriver: fit --measure and bench on --device cuda with no
// CUDA driver (HEADROOM_LIBCUDA naming a missing file) exit 69
// (train.ExitUnavailable) before any work, saying the driver is missing
// and to use --device cpu.
func TestCUDAWithoutDriver(t *testing.T) {
	t.Setenv("HEADROOM_LIBCUDA", t.TempDir()+"/missing.so")
	for _, args := range [][]string{
		{"fit", "--model", "small", "--capacity", "64MiB", "--device", "cuda", "--measure"},
		{"bench", "--tiny", "--device", "cuda", "--out", t.TempDir()},
	} {
		code, out, errs := call(args...)
		if code != train.ExitUnavailable || !strings.Contains(errs, "no CUDA driver") || !strings.Contains(errs, "use --device cpu") || out != "" {
			t.Errorf("headroom %v without a driver: exit %d, stdout %q, stderr %q; want %d, the driver's error and nothing else",
				args, code, out, errs, train.ExitUnavailable)
		}
	}
}
