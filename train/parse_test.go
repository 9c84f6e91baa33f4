package train_test

import (
	"bytes"
	"errors"
	"flag"
	"path/filepath"
	"strings"
	"testing"

	"github.com/headroom-ml/headroom/device"
	"github.com/headroom-ml/headroom/device/cpu"
	"github.com/headroom-ml/headroom/dtype"
	"github.com/headroom-ml/headroom/nn"
	"github.com/headroom-ml/headroom/optim"
	"github.com/headroom-ml/headroom/train"
)

// prog is a minimal program for Parse: the common flags, a model flag
// (--width) and an after-training flag (--eval).
type prog struct {
	train.Common
	width, eval int
}

func parseProg(name string, args []string) (*prog, string, error) {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	p := &prog{}
	p.Register(fs, train.Defaults{Steps: 10, Batch: 4, LR: 0.1})
	fs.IntVar(&p.width, "width", 8, "")
	fs.IntVar(&p.eval, "eval", 1, "")
	var stderr bytes.Buffer
	err := p.Parse(fs, args, &stderr, train.ParseOptions{Supported: []string{"amp", "accum", "checkpoint", "mem-alert"}, AfterFlags: []string{"eval"}})
	return p, stderr.String(), err
}

// saveProg writes a snapshot at step of a run of args, as the program
// name, with a tiny model.
func saveProg(t *testing.T, path, name string, step int, args ...string) {
	t.Helper()
	p, _, err := parseProg(name, args)
	if err != nil {
		t.Fatal(err)
	}
	saveTiny(t, path, train.Snapshot{Program: name, Config: p.Config(), Step: step})
}

// saveTiny writes snap with a Linear model and its SGD.
func saveTiny(t *testing.T, path string, snap train.Snapshot) {
	t.Helper()
	dev := cpu.New(0, device.Options{})
	defer dev.Close()
	m := nn.NewLinear(nn.NewBuilder(dev, dtype.F32, 1), "fc", 2, 2, true)
	defer nn.Release(m)
	opt, err := optim.NewSGD(m.Params(), optim.SGDConfig{LR: 0.1})
	if err != nil {
		t.Fatal(err)
	}
	defer opt.Release()
	if err := train.SaveSnapshot(path, m, opt, snap); err != nil {
		t.Fatal(err)
	}
}

// TestResumeTakesTheSnapshotsFlagsAndRefusesChanges: a resumed run takes
// the snapshot's values of the flags it is not given, refuses a flag that
// changes the run (naming both values) unless --override, which warns;
// after-training and invocation flags may change; the snapshot of another
// program, or one past the run's end, is refused.
func TestResumeTakesTheSnapshotsFlagsAndRefusesChanges(t *testing.T) {
	dir := t.TempDir()
	snap := filepath.Join(dir, "s.safetensors")
	saveProg(t, snap, "prog", 3, "--steps", "6", "--batch", "8", "--width", "16", "--amp", "bf16", "--eval", "5", "--mem-limit", "1GiB", "--checkpoint")
	p, warn, err := parseProg("prog", []string{"--resume", snap})
	if err != nil {
		t.Fatal(err)
	}
	if p.Steps != 6 || p.Batch != 8 || p.width != 16 || p.AMP != "bf16" || p.eval != 5 || p.MemLimit != "" || p.Checkpoint != "" || warn != "" {
		t.Errorf("resumed with steps %d batch %d width %d amp %q eval %d mem-limit %q checkpoint %q, warning %q; want the snapshot's 6, 8, 16, bf16, 5 and no --mem-limit, no --checkpoint, no warning",
			p.Steps, p.Batch, p.width, p.AMP, p.eval, p.MemLimit, p.Checkpoint, warn)
	}
	if _, _, err := parseProg("prog", []string{"--resume", snap, "--eval", "2", "--mem-limit", "2GiB", "--checkpoint", "--stop-after", "4"}); err != nil {
		t.Errorf("after-training and invocation flags: %v", err)
	}
	_, _, err = parseProg("prog", []string{"--resume", snap, "--steps", "9", "--width", "32", "--amp", "fp16"})
	var ue *train.UsageError
	msg := ""
	if err != nil {
		msg = err.Error()
	}
	for _, want := range []string{"--steps: 6 in the snapshot, 9 now", "--width: 16 in the snapshot, 32 now", "--amp: bf16 in the snapshot, fp16 now", "--override"} {
		if !errors.As(err, &ue) || !strings.Contains(msg, want) {
			t.Errorf("changed flags: %v; want a usage error with %q", err, want)
		}
	}
	t.Logf("refused: %v", err)
	p, warn, err = parseProg("prog", []string{"--resume", snap, "--steps", "9", "--override"})
	if err != nil || p.Steps != 9 || !strings.Contains(warn, "--steps: 6 in the snapshot, 9 now") {
		t.Errorf("--override: %v, steps %d, warning %q; want steps 9 and a warning naming the change", err, p.Steps, warn)
	}
	// --epochs instead of --steps: the snapshot's --steps is not taken,
	// and the change of both is named.
	if _, _, err = parseProg("prog", []string{"--resume", snap, "--epochs", "2"}); err == nil || !strings.Contains(err.Error(), "--steps: 6 in the snapshot, 0 now") {
		t.Errorf("--epochs on resume: %v; want the change of --steps named", err)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--resume", snap, "--steps", "2", "--override"}, "the snapshot is at step 3, past this run's last step 2"},
		{[]string{"--resume", snap, "--stop-after", "2"}, "the snapshot is at step 3, past --stop-after 2"},
	} {
		if _, _, err := parseProg("prog", tc.args); !errors.As(err, &ue) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: %v; want a usage error with %q", tc.args, err, tc.want)
		}
	}
	if _, _, err := parseProg("other", []string{"--resume", snap}); err == nil || !strings.Contains(err.Error(), "a snapshot of prog, not of other") {
		t.Errorf("another program's snapshot: %v", err)
	}
}

// TestResumeRefusesASnapshotWithoutConfiguration: a snapshot that stores
// no configuration needs --override.
func TestResumeRefusesASnapshotWithoutConfiguration(t *testing.T) {
	path := filepath.Join(t.TempDir(), "old.safetensors")
	saveTiny(t, path, train.Snapshot{Step: 1})
	if _, _, err := parseProg("prog", []string{"--resume", path}); err == nil || !strings.Contains(err.Error(), "stores no run configuration") {
		t.Errorf("no configuration: %v", err)
	}
	if _, warn, err := parseProg("prog", []string{"--resume", path, "--override"}); err != nil || !strings.Contains(warn, "not checked") {
		t.Errorf("no configuration, --override: %v, warning %q", err, warn)
	}
	info, err := train.ReadSnapshotInfo(path)
	if err != nil || info.Step != 1 || info.Config != nil {
		t.Errorf("ReadSnapshotInfo = %+v, %v", info, err)
	}
	if _, err := train.ReadSnapshotInfo(filepath.Join(t.TempDir(), "none")); err == nil {
		t.Error("ReadSnapshotInfo of a missing file: no error")
	}
}
