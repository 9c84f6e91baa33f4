package run_test

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/headroom-ml/headroom/examples/transformer/run"
	htrain "github.com/headroom-ml/headroom/train"
	"github.com/headroom-ml/headroom/train/traintest"
)

// corpus is a small folder of real text: Go's fmt package sources.
func corpus(t *testing.T) string {
	t.Helper()
	out, err := exec.Command("go", "env", "GOROOT").Output()
	if err != nil {
		t.Fatalf("go env GOROOT: %v", err)
	}
	return filepath.Join(strings.TrimSpace(string(out)), "src", "fmt")
}

// baseArgs are the arguments of a tiny, quick run.
func baseArgs(t *testing.T) []string {
	t.Helper()
	return []string{"--data", corpus(t), "--batch", "4", "--context", "32", "--layers", "2", "--width", "32", "--heads", "2",
		"--eval-batches", "2", "--sample", "20"}
}

func mainOK(t *testing.T, args ...string) string {
	t.Helper()
	var out, errb bytes.Buffer
	if code := run.Main(append(baseArgs(t), args...), &out, &errb); code != 0 {
		t.Fatalf("transformer %v: exit %d\n%s%s", args, code, out.String(), errb.String())
	}
	return out.String()
}

func TestSmokeReport(t *testing.T) {
	path := filepath.Join(t.TempDir(), "r.json")
	out := mainOK(t, "--steps", "5", "--report", path)
	r := traintest.ReadReport(t, path)
	if r["steps"].(float64) != 5 || !(r["final_loss"].(float64) > 0) || !(r["eval"].(float64) > 0) {
		t.Errorf("report values: %v", r)
	}
	peaks := r["peak_bytes"].(map[string]any)
	// AdamW: m and v, 8 bytes per f32 parameter.
	if peaks["optimizer"].(float64) != r["params"].(float64)*8 {
		t.Errorf("optimizer peak %v for %v parameters, want 8 bytes each", peaks["optimizer"], r["params"])
	}
	if !strings.Contains(out, "validation loss") || !strings.Contains(out, "sample:") {
		t.Errorf("output lacks the validation loss or the sample:\n%s", out)
	}
}

func TestOutOfMemoryExitsCleanly(t *testing.T) {
	var out, errb bytes.Buffer
	code := run.Main([]string{"--data", corpus(t), "--steps", "2", "--mem-limit", "1MiB"}, &out, &errb)
	msg := errb.String()
	if code != htrain.ExitOOM || !strings.Contains(msg, "out of memory") || strings.Contains(msg, "goroutine") {
		t.Fatalf("exit %d, stderr:\n%s", code, msg)
	}
}

// TestResumeIsExactWithDropout interrupts a run with dropout after 3 of 6
// steps and resumes it with --resume alone: the snapshots equal the
// uninterrupted run's bit for bit.
func TestResumeIsExactWithDropout(t *testing.T) {
	dir := t.TempDir()
	whole, half, resumed := filepath.Join(dir, "whole"), filepath.Join(dir, "half"), filepath.Join(dir, "resumed")
	for _, tc := range [][]string{
		{"--steps", "6", "--save", whole},
		{"--steps", "6", "--stop-after", "3", "--save", half},
	} {
		mainOK(t, append(tc, "--dropout", "0.1")...)
	}
	// --resume alone: every flag, the corpus's --data too, is the snapshot's.
	var out, errb bytes.Buffer
	if code := run.Main([]string{"--resume", half, "--save", resumed}, &out, &errb); code != 0 || !strings.Contains(out.String(), "resumed from step 3 of 6") {
		t.Fatalf("--resume alone: exit %d\n%s%s", code, out.String(), errb.String())
	}
	sameSnapshots(t, whole, resumed)
	// Resuming the finished run runs no step and reports the snapshot's loss.
	r1, r2 := filepath.Join(dir, "r1.json"), filepath.Join(dir, "r2.json")
	mainOK(t, "--steps", "6", "--resume", resumed, "--report", r1, "--dropout", "0.1")
	mainOK(t, "--steps", "6", "--resume", whole, "--report", r2, "--dropout", "0.1")
	j1, j2 := traintest.ReadReport(t, r1), traintest.ReadReport(t, r2)
	if j1["final_loss"] != j2["final_loss"] || j1["final_loss"] == nil || j1["final_loss"] == 0.0 {
		t.Errorf("final loss %v and %v from the resumed and the uninterrupted snapshots, want the same, non-zero", j1["final_loss"], j2["final_loss"])
	}
}

func TestTechniquesRun(t *testing.T) {
	for _, args := range [][]string{
		{"--amp"}, {"--amp", "fp16"}, {"--amp", "bf16", "--amp-params"}, {"--checkpoint"}, {"--checkpoint", "2"},
		{"--checkpoint-budget", "1MiB"}, {"--accum", "2"}, {"--share-layers"},
	} {
		mainOK(t, append([]string{"--steps", "2"}, args...)...)
	}
}

func TestQuantizeInt8(t *testing.T) {
	dir := t.TempDir()
	plain, q := filepath.Join(dir, "p.json"), filepath.Join(dir, "q.json")
	mainOK(t, "--steps", "3", "--report", plain)
	out := mainOK(t, "--steps", "3", "--quantize", "int8", "--report", q)
	pp := traintest.ReadReport(t, plain)["peak_bytes"].(map[string]any)["parameter"].(float64)
	rq := traintest.ReadReport(t, q)
	qp := rq["peak_bytes"].(map[string]any)["parameter"].(float64)
	if !(qp < pp) || rq["extra"].(map[string]any)["quantize"] == nil || !strings.Contains(out, "int8:") {
		t.Errorf("int8 parameter peak %v vs float %v; report %v", qp, pp, rq["extra"])
	}
	t.Logf("parameter peak: float %v, int8 %v", pp, qp)
}

// TestEpochs runs --epochs instead of --steps: an epoch is as many steps of
// --batch windows as the training text holds, and the cosine schedule
// spans them; a text too small for one step is a clear error, not a panic.
func TestEpochs(t *testing.T) {
	dir := t.TempDir()
	text := filepath.Join(dir, "t.txt")
	b := make([]byte, 6000)
	for i := range b {
		b[i] = "func main() { fmt.Println(x) }\n"[i%31]
	}
	if err := os.WriteFile(text, b, 0o644); err != nil {
		t.Fatal(err)
	}
	rp := filepath.Join(dir, "r.json")
	mainOK(t, "--data", text, "--val-fraction", "0.1", "--steps", "0", "--epochs", "2", "--report", rp)
	r := traintest.ReadReport(t, rp)
	train := 6000 - 600 // SplitSpread(0.1) holds out 600 bytes
	if want := 2 * (train / (4 * 32)); r["steps"] != float64(want) {
		t.Errorf("--epochs 2: %v steps, want %d", r["steps"], want)
	}
	var out, errb bytes.Buffer
	args := []string{"--data", text, "--val-fraction", "0.1", "--steps", "0", "--epochs", "1", "--batch", "64", "--context", "100",
		"--layers", "1", "--width", "16", "--heads", "2"}
	if code := run.Main(args, &out, &errb); code != htrain.ExitUsage || !strings.Contains(errb.String(), "--epochs 1") {
		t.Errorf("an epoch without a full batch: exit %d, stderr %q; want %d and an error naming --epochs", code, errb.String(), htrain.ExitUsage)
	}
}

// TestBadFlagsAreRefusedFirst: every bad flag is a usage error (exit 64)
// naming the flag, its value and what it takes, before the corpus is read,
// with nothing trained and no file written.
func TestBadFlagsAreRefusedFirst(t *testing.T) {
	own := []traintest.Refusal{
		traintest.Refuse("--context 0", "--context 0: want a context of ≥ 1 bytes"),
		traintest.Refuse("--batch 1000000000000", "--batch 1000000000000: its host buffers need"),
		traintest.Refuse("--context -3", "--context -3: want a context"),
		traintest.Refuse("--layers 0", "--layers 0: want ≥ 1 transformer blocks"),
		traintest.Refuse("--width 0", "--width 0: want a model width ≥ 1"),
		traintest.Refuse("--heads 0", "--heads 0: want ≥ 1 attention heads"),
		traintest.Refuse("--heads 3", "--heads 3: want a number of heads that divides --width 32"),
		traintest.Refuse("--dropout 1", "--dropout 1: want a probability in [0, 1)"),
		traintest.Refuse("--dropout -0.1", "--dropout -0.1: want a probability in [0, 1)"),
		traintest.Refuse("--attention flash", "--attention flash: want fused or materialized"),
		traintest.Refuse("--attention materialized --tp 2", "--attention materialized: want fused with --tp or --pp"),
		traintest.Refuse("--val-fraction 0", "--val-fraction 0: want a fraction in (0, 1)"),
		traintest.Refuse("--val-fraction 1", "--val-fraction 1: want a fraction in (0, 1)"),
		traintest.Refuse("--eval-batches 0", "--eval-batches 0: want ≥ 1 validation batches"),
		traintest.Refuse("--sample -1", "--sample -1: want ≥ 0 bytes"),
		traintest.Refuse("--sample 5 --prompt=", `--prompt "": want at least one byte`),
		traintest.Refuse("--clip NaN", "--clip NaN: want a finite gradient-norm limit ≥ 0"),
		traintest.Refuse("--clip -1", "--clip -1: want a finite gradient-norm limit ≥ 0"),
		traintest.Refuse("--clip Inf", "--clip +Inf: want a finite gradient-norm limit ≥ 0"),
		traintest.Refuse("--weight-decay -1", "--weight-decay -1: want a finite weight decay ≥ 0"),
		traintest.Refuse("--corpus-slice 0.8", "--corpus-slice 0.8: want lo:hi, two fractions with 0 ≤ lo < hi ≤ 1"),
		traintest.Refuse("--corpus-slice 0.8:0.8", "--corpus-slice 0.8:0.8: want lo:hi"),
		traintest.Refuse("--corpus-slice 0.5:1.5", "--corpus-slice 0.5:1.5: want lo:hi"),
		traintest.Refuse("--corpus-slice -0.1:0.5", "--corpus-slice -0.1:0.5: want lo:hi"),
		traintest.Refuse("--corpus-slice a:b", "--corpus-slice a:b: want lo:hi"),
		traintest.Refuse("--corpus-slice NaN:1", "--corpus-slice NaN:1: want lo:hi"),
		traintest.Refuse("--prune 0.3", "--prune: not available yet"),
		traintest.Refuse("--quantize int8 --qat", "--qat: not available yet"),
	}
	base := []string{"--steps", "2", "--batch", "8", "--context", "16", "--layers", "1", "--width", "32", "--heads", "2"}
	traintest.Refused(t, run.Main, base, append(append(own, splitRefusals...), append(traintest.Common, traintest.Split...)...))
}

// splitRefusals are the example's own refusals of --tp and --pp (base:
// 1 layer, 2 heads, width 32, batch 8, context 16).
var splitRefusals = []traintest.Refusal{
	traintest.Refuse("--tp 4", "--heads 2: want a number of heads divisible by --tp 4"),
	traintest.Refuse("--tp 512 --heads 512 --width 512", "--tp 512: want a divisor of the vocabulary, 256 bytes"),
	traintest.Refuse("--pp 2", "--pp 2: want at most --layers 1 stages"),
	traintest.Refuse("--pp 2 --layers 2 --tie-embeddings", "--tie-embeddings true: want false with --pp 2"),
	traintest.Refuse("--tp 2 --share-layers", "--share-layers true: want false with --tp or --pp", "not available yet"),
	traintest.Refuse("--tp 2 --sequence-parallel --batch 1 --context 1", "--batch 1: want micro-batches whose tokens (batch/accum × context = 1) divide by --tp 2"),
}

// TestNoCUDA checks that --device cuda without a driver is a clear error
// and exit status 69, not a panic.
func TestNoCUDA(t *testing.T) {
	traintest.Unavailable(t, run.Main, []string{"--steps", "1", "--batch", "8", "--context", "16", "--layers", "1", "--width", "32", "--heads", "2"})
}
