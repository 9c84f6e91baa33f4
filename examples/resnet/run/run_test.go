package run_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/headroom-ml/headroom/examples/resnet/run"
	"github.com/headroom-ml/headroom/safetensors"
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
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var r map[string]any
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"steps", "final_loss", "eval", "samples_per_sec", "peak_bytes", "capacity_bytes", "flags"} {
		if _, ok := r[k]; !ok {
			t.Errorf("report has no %q: %s", k, b)
		}
	}
	if k := r["kernels"]; k != "go" && k != "avx2" && k != "avx512" && k != "avx512+vnni" {
		t.Errorf("report's kernels = %v, want the cpu device's path", k)
	}
	if r["steps"].(float64) != 3 || !(r["final_loss"].(float64) > 0) || !(r["samples_per_sec"].(float64) > 0) {
		t.Errorf("report values: %s", b)
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
	if code == 0 || !strings.Contains(msg, "out of memory") || strings.Contains(msg, "goroutine") || strings.Contains(msg, "panic") {
		t.Fatalf("exit %d, stderr:\n%s", code, msg)
	}
}

func TestBadFlags(t *testing.T) {
	for _, args := range [][]string{
		{"--model", "resnet7"}, {"--amp", "fp8"}, {"--batch", "0"}, {"--zero", "4"}, {"--mem-limit", "lots"}, {"--checkpoint", "0"},
	} {
		var out, errb bytes.Buffer
		if code := run.Main(args, &out, &errb); code != 1 || errb.Len() == 0 {
			t.Errorf("%v: exit %d, stderr %q; want 1 and a message", args, code, errb.String())
		}
	}
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
	a, err := safetensors.ReadFile(whole)
	if err != nil {
		t.Fatal(err)
	}
	b, err := safetensors.ReadFile(resumed)
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
	var j1, j2 map[string]any
	for p, j := range map[string]*map[string]any{r1: &j1, r2: &j2} {
		data, _ := os.ReadFile(p)
		json.Unmarshal(data, j)
	}
	if j1["final_loss"] != j2["final_loss"] {
		t.Errorf("final loss %v uninterrupted, %v resumed", j1["final_loss"], j2["final_loss"])
	}
	// Resuming a finished run (to quantize or evaluate it) runs no step and
	// reports the loss the snapshot recorded.
	r3 := filepath.Join(dir, "r3.json")
	mainOK(t, "--steps", "6", "--resume", whole, "--report", r3, "--eval-samples", "16")
	if j3 := readReport(t, r3); j3["final_loss"] != j1["final_loss"] || j1["final_loss"] == 0.0 {
		t.Errorf("final loss %v after resuming the finished run, want the run's %v", j3["final_loss"], j1["final_loss"])
	}
}

func readReport(t *testing.T, path string) map[string]any {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var r map[string]any
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatal(err)
	}
	return r
}

// TestPruneShrinksParameters: --prune 0.3 leaves at most 75% of the
// parameter bytes, by the allocator's count.
func TestPruneShrinksParameters(t *testing.T) {
	dir := t.TempDir()
	plain, pruned := filepath.Join(dir, "plain.json"), filepath.Join(dir, "pruned.json")
	mainOK(t, "--steps", "3", "--report", plain)
	mainOK(t, "--steps", "3", "--prune", "0.3", "--finetune", "2", "--report", pruned)
	p := readReport(t, plain)["peak_bytes"].(map[string]any)["parameter"].(float64)
	q := readReport(t, pruned)["peak_bytes"].(map[string]any)["parameter"].(float64)
	if q > 0.75*p {
		t.Errorf("parameter peak %v pruned, %v plain: ratio %.3f, want ≤ 0.75", q, p, q/p)
	}
}

// TestMemAlertSavesAndStops: with a capacity just above one step's peak,
// --mem-alert 0.9 stops at the first step with a resumable snapshot and
// exit status 3; the snapshot resumes under a larger capacity.
func TestMemAlertSavesAndStops(t *testing.T) {
	dir := t.TempDir()
	rep, snap, log := filepath.Join(dir, "r.json"), filepath.Join(dir, "alert"), filepath.Join(dir, "mem.jsonl")
	mainOK(t, "--steps", "2", "--report", rep)
	peak := readReport(t, rep)["peak_bytes"].(map[string]any)["total"].(float64)
	limit := fmt.Sprint(int64(peak/0.95) + 4<<20) // reserved segments need some slack
	var out, errb bytes.Buffer
	code := run.Main(append(append([]string{}, fast...), "--steps", "4", "--mem-limit", limit, "--mem-alert", "0.5",
		"--save", snap, "--mem-log", log), &out, &errb)
	msg := errb.String()
	if code != 3 || !strings.Contains(msg, "memory alert") || !strings.Contains(msg, "--resume "+snap) {
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
	p := readReport(t, plain)["peak_bytes"].(map[string]any)["parameter"].(float64)
	for i, extra := range [][]string{{}, {"--calibrate", "2"}, {"--qat", "--finetune", "2"}} {
		path := filepath.Join(dir, fmt.Sprintf("q%d.json", i))
		mainOK(t, append([]string{"--steps", "3", "--quantize", "int8", "--report", path}, extra...)...)
		r := readReport(t, path)
		q := r["peak_bytes"].(map[string]any)["parameter"].(float64)
		if q > 0.27*p {
			t.Errorf("%v: parameter peak %v int8, %v float: ratio %.3f, want ≤ 0.27", extra, q, p, q/p)
		}
		if _, ok := r["extra"].(map[string]any)["quantize"]; !ok {
			t.Errorf("%v: report has no quantize record", extra)
		}
	}
}
