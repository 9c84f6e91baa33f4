package run_test

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/headroom-ml/headroom/examples/resnet/run"
	"github.com/headroom-ml/headroom/safetensors"
	"github.com/headroom-ml/headroom/train"
	"github.com/headroom-ml/headroom/train/traintest"
)

// fast are the flags of a quick run on MNIST.
var fast = []string{"--batch", "16", "--eval-samples", "64"}

func mainOK(t *testing.T, args ...string) string {
	t.Helper()
	var out, errb bytes.Buffer
	if code := run.Main(append(append([]string{}, fast...), args...), &out, &errb); code != 0 {
		t.Fatalf("resnet %v: exit %d\n%s%s", args, code, out.String(), errb.String())
	}
	return out.String()
}

func TestSmokeReport(t *testing.T) {
	path := filepath.Join(t.TempDir(), "r.json")
	out := mainOK(t, "--steps", "3", "--report", path)
	r := traintest.ReadReport(t, path)
	for _, k := range []string{"steps", "final_loss", "eval", "samples_per_sec", "peak_bytes", "capacity_bytes", "flags"} {
		if _, ok := r[k]; !ok {
			t.Errorf("report has no %q: %v", k, r)
		}
	}
	if k := r["kernels"]; k != "go" && k != "avx2" && k != "avx512" && k != "avx512+vnni" &&
		k != "avx512+bf16" && k != "avx512+vnni+bf16" &&
		k != "avx512+bf16+amx" && k != "avx512+vnni+bf16+amx" {
		t.Errorf("report's kernels = %v, want the cpu device's path", k)
	}
	if r["steps"].(float64) != 3 || !(r["final_loss"].(float64) > 0) || !(r["samples_per_sec"].(float64) > 0) {
		t.Errorf("report values: %v", r)
	}
	if e := r["eval"].(float64); e < 0 || e > 1 {
		t.Errorf("eval %v is not an accuracy", e)
	}
	peaks := r["peak_bytes"].(map[string]any)
	for _, k := range []string{"total", "parameter", "gradient", "optimizer", "activation", "workspace"} {
		if v, ok := peaks[k].(float64); !ok || v <= 0 {
			t.Errorf("peak_bytes.%s = %v, want > 0", k, peaks[k])
		}
	}
	// SGD with momentum: one buffer per parameter, 4 bytes per f32 element.
	if peaks["optimizer"].(float64) != r["params"].(float64)*4 {
		t.Errorf("optimizer peak %v bytes for %v parameters, want 4 per parameter", peaks["optimizer"], r["params"])
	}
	if r["flags"].(map[string]any)["batch"] != "16" {
		t.Errorf("flags: %v", r["flags"])
	}
	if !strings.Contains(out, "test accuracy") || !strings.Contains(out, "Requested memory") {
		t.Errorf("output lacks the evaluation or the summary:\n%s", out)
	}
}

func TestOutOfMemoryExitsCleanly(t *testing.T) {
	var out, errb bytes.Buffer
	code := run.Main([]string{"--steps", "2", "--mem-limit", "1MiB"}, &out, &errb)
	msg := errb.String()
	if code != train.ExitOOM || !strings.Contains(msg, "out of memory") || strings.Contains(msg, "goroutine") || strings.Contains(msg, "panic") {
		t.Fatalf("exit %d (want %d), stderr:\n%s", code, train.ExitOOM, msg)
	}
}

// TestBadFlagsAreRefusedFirst: every bad flag is a usage error (exit 64)
// naming the flag, its value and what it takes, before the data is read,
// with nothing trained and no file written.
func TestBadFlagsAreRefusedFirst(t *testing.T) {
	own := []traintest.Refusal{
		traintest.Refuse("--prune 1.5", "--prune 1.5: want a fraction of the channels in [0, 1)"),
		traintest.Refuse("--prune -0.3", "--prune -0.3: want a fraction"),
		traintest.Refuse("--prune -0.1", "--prune -0.1: want a fraction"),
		traintest.Refuse("--prune 0.3 --save {dir}/s", "--prune: not with --resume, --save"),
		traintest.Refuse("--prune 0.3 --ranks 2", "--prune: not with --resume, --save or data parallelism"),
		traintest.Refuse("--prune 0.3 --ranks 2 --zero 3", "--prune with --zero 3: pruning ranks each block's channels by the magnitudes of the whole model's weights, which no ZeRO-3 rank holds"),
		traintest.Refuse("--prune 0.3 --finetune -5", "--finetune -5: want ≥ 0 fine-tuning steps"),
		traintest.Refuse("--finetune 5", "--finetune 5: want --prune or --qat"),
		traintest.Refuse("--eval-samples -4", "--eval-samples -4: want ≥ 0 test images"),
		traintest.Refuse("--momentum 1", "--momentum 1: want a momentum in [0, 1)"),
		traintest.Refuse("--momentum -0.5", "--momentum -0.5: want a momentum in [0, 1)"),
		traintest.Refuse("--weight-decay -1", "--weight-decay -1: want a finite weight decay ≥ 0"),
		traintest.Refuse("--weight-decay NaN", "--weight-decay NaN: want a finite weight decay ≥ 0"),
		traintest.Refuse("--optimizer lion", "--optimizer lion: want sgd, adamw or adamw8bit"),
		traintest.Refuse("--optimizer adamw --momentum 0.5", "--momentum 0.5: want --optimizer sgd"),
		traintest.Refuse("--optimizer adamw8bit --prune 0.3", "--optimizer adamw8bit: want sgd with --prune or --qat"),
		traintest.Refuse("--optimizer adamw --quantize int8 --qat", "--optimizer adamw: want sgd with --prune or --qat"),
		traintest.Refuse("--model resnet7", "--model resnet7: want small, resnet18"),
		traintest.Refuse("--dataset imagenet", "--dataset imagenet: want mnist, cifar10 or synthetic"),
		traintest.Refuse("--dataset synthetic", "--data {dir}/data: want no --data with --dataset synthetic"),
		traintest.Refuse("--stem big", "--stem big: want auto, small or imagenet"),
		traintest.Refuse("--calibrate 2", "--calibrate and --qat need --quantize int8"),
		traintest.Refuse("--quantize int8 --calibrate -1", "--calibrate -1: want ≥ 0 calibration batches"),
		traintest.Refuse("--quantize int8 --qat --calibrate 2", "--calibrate and --qat: choose one"),
		traintest.Refuse("--tp 2", "--tp: not available yet"),
		traintest.Refuse("--pp 2 --pipe-schedule gpipe", "--pipe-schedule, --pp: not available yet"),
		traintest.Refuse("--sequence-parallel", "--sequence-parallel: not available yet"),
	}
	traintest.Refused(t, run.Main, []string{"--steps", "2", "--batch", "8"}, append(own, traintest.Common...))
}

// TestResumeIsExact interrupts a run after 3 of 6 steps and resumes it:
// the final parameters, optimizer state and loss equal an uninterrupted
// run's bit for bit.
func TestResumeIsExact(t *testing.T) {
	dir := t.TempDir()
	whole, half, resumed := filepath.Join(dir, "whole"), filepath.Join(dir, "half"), filepath.Join(dir, "resumed")
	r1, r2 := filepath.Join(dir, "r1.json"), filepath.Join(dir, "r2.json")
	for _, tc := range [][]string{
		{"--steps", "6", "--save", whole, "--report", r1},
		{"--steps", "6", "--stop-after", "3", "--save", half},
		{"--steps", "6", "--resume", half, "--save", resumed, "--report", r2},
	} {
		mainOK(t, append(tc, "--eval-samples", "16")...)
	}
	sameTensors(t, whole, resumed)
	j1, j2 := traintest.ReadReport(t, r1), traintest.ReadReport(t, r2)
	if j1["final_loss"] != j2["final_loss"] {
		t.Errorf("final loss %v uninterrupted, %v resumed", j1["final_loss"], j2["final_loss"])
	}
	// Resuming a finished run (to quantize or evaluate it) runs no step and
	// reports the loss the snapshot recorded.
	r3 := filepath.Join(dir, "r3.json")
	mainOK(t, "--steps", "6", "--resume", whole, "--report", r3, "--eval-samples", "16")
	if j3 := traintest.ReadReport(t, r3); j3["final_loss"] != j1["final_loss"] || j1["final_loss"] == 0.0 {
		t.Errorf("final loss %v after resuming the finished run, want the run's %v", j3["final_loss"], j1["final_loss"])
	}
}

// TestPruneShrinksParameters: --prune 0.3 leaves at most 75% of the
// parameter bytes, by the allocator's count.
func TestPruneShrinksParameters(t *testing.T) {
	dir := t.TempDir()
	plain, pruned := filepath.Join(dir, "plain.json"), filepath.Join(dir, "pruned.json")
	mainOK(t, "--steps", "3", "--report", plain)
	mainOK(t, "--steps", "3", "--prune", "0.3", "--finetune", "2", "--report", pruned)
	p := traintest.ReadReport(t, plain)["peak_bytes"].(map[string]any)["parameter"].(float64)
	q := traintest.ReadReport(t, pruned)["peak_bytes"].(map[string]any)["parameter"].(float64)
	if q > 0.75*p {
		t.Errorf("parameter peak %v pruned, %v plain: ratio %.3f, want ≤ 0.75", q, p, q/p)
	}
}

// TestMemAlertSavesAndStops: with a capacity just above one step's peak,
// --mem-alert 0.9 stops at the first step with a resumable snapshot and
// exit status 4 (train.ExitAlert); the snapshot resumes under a larger
// capacity.
func TestMemAlertSavesAndStops(t *testing.T) {
	dir := t.TempDir()
	rep, snap, log := filepath.Join(dir, "r.json"), filepath.Join(dir, "alert"), filepath.Join(dir, "mem.jsonl")
	mainOK(t, "--steps", "2", "--report", rep)
	peak := traintest.ReadReport(t, rep)["peak_bytes"].(map[string]any)["total"].(float64)
	limit := fmt.Sprint(int64(peak/0.95) + 4<<20) // reserved segments need some slack
	var out, errb bytes.Buffer
	code := run.Main(append(append([]string{}, fast...), "--steps", "4", "--mem-limit", limit, "--mem-alert", "0.5",
		"--save", snap, "--mem-log", log), &out, &errb)
	msg := errb.String()
	if code != train.ExitAlert || !strings.Contains(msg, "memory alert") || !strings.Contains(msg, "--resume "+snap) {
		t.Fatalf("exit %d, stderr:\n%s", code, msg)
	}
	if b, err := os.ReadFile(log); err != nil || !strings.Contains(string(b), `"peak_by_tag"`) {
		t.Errorf("memory log: %v %q", err, b)
	}
	mainOK(t, "--steps", "4", "--resume", snap)
}

// TestQuantizeShrinksParameters: --quantize int8 (dynamic, static and QAT)
// leaves at most 27% of the float parameter bytes, by the allocator.
func TestQuantizeShrinksParameters(t *testing.T) {
	dir := t.TempDir()
	plain := filepath.Join(dir, "plain.json")
	mainOK(t, "--steps", "3", "--report", plain)
	p := traintest.ReadReport(t, plain)["peak_bytes"].(map[string]any)["parameter"].(float64)
	for i, extra := range [][]string{{}, {"--calibrate", "2"}, {"--qat", "--finetune", "2"}} {
		path := filepath.Join(dir, fmt.Sprintf("q%d.json", i))
		mainOK(t, append([]string{"--steps", "3", "--quantize", "int8", "--report", path}, extra...)...)
		r := traintest.ReadReport(t, path)
		q := r["peak_bytes"].(map[string]any)["parameter"].(float64)
		if q > 0.27*p {
			t.Errorf("%v: parameter peak %v int8, %v float: ratio %.3f, want ≤ 0.27", extra, q, p, q/p)
		}
		if _, ok := r["extra"].(map[string]any)["quantize"]; !ok {
			t.Errorf("%v: report has no quantize record", extra)
		}
	}
}

// TestResumeAloneContinuesTheRunAndRefusesChanges trains a tiny run on
// synthetic images in one go and interrupted after 2 of 4 steps: --resume
// with no other flag continues the same run (the snapshot's flags) to the
// uninterrupted run's tensors, bit for bit; another --steps or --batch is
// refused naming both values, and accepted with --override (with a
// warning); a snapshot past the run's end is refused; resuming the
// finished run trains no step and reports its loss, with no negative
// step count or speed.
func TestResumeAloneContinuesTheRunAndRefusesChanges(t *testing.T) {
	dir := t.TempDir()
	p := func(name string) string { return filepath.Join(dir, name) }
	tiny := []string{"--dataset", "synthetic", "--steps", "4", "--batch", "8", "--lr", "0.1", "--eval-samples", "16"}
	exec := func(args ...string) (int, string, string) {
		var out, errb bytes.Buffer
		code := run.Main(args, &out, &errb)
		return code, out.String(), errb.String()
	}
	for _, args := range [][]string{
		append(tiny, "--save", p("whole"), "--report", p("whole.json")),
		append(tiny, "--stop-after", "2", "--save", p("half")),
	} {
		if code, out, errb := exec(args...); code != 0 {
			t.Fatalf("%q: exit %d\n%s%s", args, code, out, errb)
		}
	}
	code, out, errb := exec("--resume", p("half"), "--save", p("resumed"))
	if code != 0 || !strings.Contains(out, "resumed from step 2 of 4") {
		t.Fatalf("--resume alone: exit %d\n%s%s", code, out, errb)
	}
	sameTensors(t, p("whole"), p("resumed"))

	code, _, errb = exec("--resume", p("half"), "--steps", "6", "--batch", "16")
	if code != train.ExitUsage || !strings.Contains(errb, "--steps: 4 in the snapshot, 6 now") || !strings.Contains(errb, "--batch: 8 in the snapshot, 16 now") {
		t.Errorf("changed --steps and --batch: exit %d, stderr %q; want %d naming both", code, errb, train.ExitUsage)
	}
	code, out, errb = exec("--resume", p("half"), "--steps", "6", "--override")
	if code != 0 || !strings.Contains(errb, "warning: --override") || !strings.Contains(errb, "--steps: 4 in the snapshot, 6 now") || !strings.Contains(out, "resumed from step 2 of 6") {
		t.Errorf("--override: exit %d, stdout %q, stderr %q", code, out, errb)
	}
	code, out, errb = exec("--resume", p("whole"), "--steps", "2", "--override")
	if code != train.ExitUsage || !strings.Contains(errb, "the snapshot is at step 4, past this run's last step 2") || out != "" {
		t.Errorf("a snapshot past the end: exit %d, stdout %q, stderr %q", code, out, errb)
	}
	// What follows training may change: quantize the finished run after a
	// QAT fine-tuning of another length, evaluate on other images.
	if _, err := run.Parse([]string{"--resume", p("whole"), "--quantize", "int8", "--qat", "--finetune", "3", "--eval-samples", "8"}, io.Discard); err != nil {
		t.Errorf("after-training flags on resume: %v", err)
	}
	code, out, errb = exec("--resume", p("whole"), "--report", p("again.json"))
	if code != 0 || !strings.Contains(out, "no step left to train") || !strings.Contains(out, "no step trained") || regexp.MustCompile(`-[0-9.]+ (steps|samples/s)`).MatchString(out) {
		t.Errorf("resuming the finished run: exit %d\n%s%s", code, out, errb)
	}
	if a, b := traintest.ReadReport(t, p("whole.json")), traintest.ReadReport(t, p("again.json")); a["final_loss"] != b["final_loss"] || b["samples_per_sec"] != 0.0 {
		t.Errorf("finished run resumed: final loss %v (want the run's %v), %v samples/s (want 0)", b["final_loss"], a["final_loss"], b["samples_per_sec"])
	}
}

// sameTensors checks that two snapshots hold the same tensors, bit for bit.
func sameTensors(t *testing.T, path1, path2 string) {
	t.Helper()
	a, err := safetensors.ReadFile(path1)
	if err != nil {
		t.Fatal(err)
	}
	b, err := safetensors.ReadFile(path2)
	if err != nil {
		t.Fatal(err)
	}
	if len(a.Names) != len(b.Names) || len(a.Names) == 0 {
		t.Fatalf("%d and %d tensors", len(a.Names), len(b.Names))
	}
	for _, n := range a.Names {
		if !bytes.Equal(a.Tensors[n].Data, b.Tensors[n].Data) {
			t.Errorf("tensor %q differs after resuming", n)
		}
	}
}
