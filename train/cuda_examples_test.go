package train_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/headroom-ml/headroom/device"
	"github.com/headroom-ml/headroom/device/cuda/cudatest"
	resnet "github.com/headroom-ml/headroom/examples/resnet/run"
	transformer "github.com/headroom-ml/headroom/examples/transformer/run"
	"github.com/headroom-ml/headroom/train"
)

// The examples with --device cuda on the emulated device, each technique
// flag of a single device among them, against the same command on cpu.
// (These live here, not in the examples' run packages, whose tests check
// that --device cuda without a driver is refused: the driver is loaded
// once per process.)

// exampleMain is an example's run.Main.
type exampleMain func(args []string, stdout, stderr io.Writer) int

// tinyResNet is a tiny run of the resnet example (2 steps of 2 images).
var tinyResNet = []string{"--dataset", "synthetic", "--steps", "2", "--batch", "2", "--eval-samples", "4"}

// tinyTransformer is a tiny run of the transformer example, on this
// package's Go sources (a corpus of a few hundred KiB, written to a
// temporary file) rather than the default GOROOT's, which takes longer to
// read than the run, and extra flags.
func tinyTransformer(t *testing.T, extra ...string) []string {
	t.Helper()
	files, err := filepath.Glob("*.go")
	if err != nil || len(files) == 0 {
		t.Fatalf("the package's sources: %v, %v", files, err)
	}
	var text []byte
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		text = append(text, b...)
	}
	path := filepath.Join(t.TempDir(), "corpus.txt")
	if err := os.WriteFile(path, text, 0o644); err != nil {
		t.Fatal(err)
	}
	return append([]string{"--data", path, "--layers", "2", "--width", "32", "--heads", "2", "--context", "16", "--steps", "3",
		"--batch", "4", "--eval-batches", "2", "--sample", "8", "--dropout", "0.1"}, extra...)
}

// runExample runs main with args on device, in its own folder, and
// returns the exit status, stderr and the report (nil when the run wrote
// none).
func runExample(t *testing.T, main exampleMain, dev string, args []string) (int, string, *train.Report) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "report.json")
	var out, errb bytes.Buffer
	code := main(append([]string{"--device", dev, "--report", path}, args...), &out, &errb)
	b, err := os.ReadFile(path)
	if err != nil {
		return code, errb.String(), nil
	}
	var r train.Report
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return code, errb.String(), &r
}

// TestExamplesOnCUDA runs each example with technique flags on cpu and on
// the emulated cuda: both succeed, the final training loss and the
// evaluation agree (within cudaTolF32, or cudaTolBF16 with --amp), and
// cuda's memory statistics are cpu's plus the cuBLAS workspace (the cpu
// device's allocator is the one meta's accounting mirrors).
func TestExamplesOnCUDA(t *testing.T) {
	for _, tc := range []struct {
		name string
		main exampleMain
		args []string
		tol  float64
	}{
		{"resnet --amp --checkpoint", resnet.Main, append(tinyResNet, "--amp", "--checkpoint"), cudaTolBF16},
		{"resnet --checkpoint-budget --accum 2 --prune", resnet.Main, append(tinyResNet, "--checkpoint-budget", "1MiB", "--accum", "2", "--prune", "0.3", "--finetune", "1"), cudaTolF32},
		{"transformer --checkpoint --accum 4", transformer.Main, tinyTransformer(t, "--checkpoint", "--accum", "4"), cudaTolF32},
		{"transformer --checkpoint-budget --mem-alert", transformer.Main, tinyTransformer(t, "--checkpoint-budget", "64KiB", "--mem-limit", "128MiB", "--mem-alert", "0.9"), cudaTolF32},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cc, cerr, c := runExample(t, tc.main, "cpu", tc.args)
			gc, gerr, g := runExample(t, tc.main, "cuda", tc.args)
			if cc != 0 || gc != 0 || c == nil || g == nil {
				t.Fatalf("exit %d on cpu, %d on cuda:\n%s\n%s", cc, gc, cerr, gerr)
			}
			for _, v := range []struct {
				what      string
				want, got float64
			}{{"final loss", c.FinalLoss, g.FinalLoss}, {c.EvalMetric, c.Eval, g.Eval}} {
				if d := math.Abs(v.got - v.want); d > tc.tol*math.Abs(v.want) || math.IsNaN(v.got) {
					t.Errorf("%s %.8g on cuda, %.8g on cpu (|Δ| %.3g > %g relative)", v.what, v.got, v.want, d, tc.tol)
				}
			}
			cudatest.SameStats(t, "the run's statistics", c.Stats, g.Stats, cudatest.Workspace(t, cudatest.Open(t, 0, device.Options{})))
			t.Logf("final loss cpu %.7f cuda %.7f; %s cpu %.7f cuda %.7f; peak cpu %d B, cuda %d B", c.FinalLoss, g.FinalLoss, c.EvalMetric, c.Eval, g.Eval, c.PeakBytes.Total, g.PeakBytes.Total)
		})
	}
}

// TestTransformerAlertResumesOnCUDA: on cuda, --mem-alert stops the
// transformer (exit 4) after the step whose peak passes the threshold with
// a resumable snapshot, and --resume with more memory finishes the run
// with the loss of the run that was never stopped.
func TestTransformerAlertResumesOnCUDA(t *testing.T) {
	memLog := filepath.Join(t.TempDir(), "mem.jsonl")
	args := tinyTransformer(t)
	code, _, whole := runExample(t, transformer.Main, "cuda", append(args, "--mem-log", memLog))
	if code != 0 || whole == nil {
		t.Fatalf("the whole run: exit %d", code)
	}
	// The threshold halfway between the first step's peak and the first
	// higher one: the step that reaches that stops the run.
	const capacity = 64 << 20
	peaks := stepPeaks(t, memLog)
	at := 1
	for at < len(peaks) && peaks[at] <= peaks[0] {
		at++
	}
	if at == len(peaks) || at == len(peaks)-1 {
		t.Fatalf("step peaks %v: want one above the first before the last step", peaks)
	}
	th := float64(peaks[0]+peaks[at]) / 2 / capacity
	snap := filepath.Join(t.TempDir(), "alert.safetensors")
	code, stderr, _ := runExample(t, transformer.Main, "cuda", append(args, "--mem-limit", "64MiB",
		"--mem-alert", strconv.FormatFloat(th, 'g', -1, 64), "--save", snap))
	if code != train.ExitAlert || !strings.Contains(stderr, fmt.Sprintf("memory alert at step %d:", at)) || !strings.Contains(stderr, "--resume "+snap) {
		t.Fatalf("--mem-alert %v: exit %d (want %d), stderr:\n%s", th, code, train.ExitAlert, stderr)
	}
	alert := strings.SplitN(stderr, "\n", 2)[0]
	code, stderr, resumed := runExample(t, transformer.Main, "cuda", append(args, "--resume", snap,
		"--mem-limit", "128MiB", "--mem-alert", "0", "--override"))
	if code != 0 || resumed == nil {
		t.Fatalf("--resume: exit %d:\n%s", code, stderr)
	}
	if d := math.Abs(resumed.FinalLoss - whole.FinalLoss); d > cudaTolF32*math.Abs(whole.FinalLoss) {
		t.Errorf("resumed after the alert: final loss %.8g, the whole run's %.8g", resumed.FinalLoss, whole.FinalLoss)
	}
	t.Logf("step peaks %v B; --mem-alert %.4f of 64 MiB: %s; resumed: final loss %.7f, the whole run's %.7f", peaks, th, alert, resumed.FinalLoss, whole.FinalLoss)
}

// stepPeaks reads the step peaks of a --mem-log file.
func stepPeaks(t *testing.T, path string) []int64 {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var peaks []int64
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		var l train.StepLog
		if err := json.Unmarshal([]byte(line), &l); err != nil {
			t.Fatalf("%s: %q: %v", path, line, err)
		}
		peaks = append(peaks, l.Peak)
	}
	return peaks
}
