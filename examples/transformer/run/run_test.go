package run_test

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/headroom-ml/headroom/examples/transformer/run"
	"github.com/headroom-ml/headroom/safetensors"
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

func mainOK(t *testing.T, args ...string) string {
	t.Helper()
	base := []string{"--data", corpus(t), "--batch", "4", "--context", "32", "--layers", "2", "--width", "32", "--heads", "2",
		"--eval-batches", "2", "--sample", "20"}
	var out, errb bytes.Buffer
	if code := run.Main(append(base, args...), &out, &errb); code != 0 {
		t.Fatalf("transformer %v: exit %d\n%s%s", args, code, out.String(), errb.String())
	}
	return out.String()
}

func TestSmokeReport(t *testing.T) {
	path := filepath.Join(t.TempDir(), "r.json")
	out := mainOK(t, "--steps", "5", "--report", path)
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var r map[string]any
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatal(err)
	}
	if r["steps"].(float64) != 5 || !(r["final_loss"].(float64) > 0) || !(r["eval"].(float64) > 0) {
		t.Errorf("report values: %s", b)
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
	if code == 0 || !strings.Contains(msg, "out of memory") || strings.Contains(msg, "goroutine") {
		t.Fatalf("exit %d, stderr:\n%s", code, msg)
	}
}

func TestResumeIsExactWithDropout(t *testing.T) {
	dir := t.TempDir()
	whole, half, resumed := filepath.Join(dir, "whole"), filepath.Join(dir, "half"), filepath.Join(dir, "resumed")
	for _, tc := range [][]string{
		{"--steps", "6", "--save", whole},
		{"--steps", "6", "--stop-after", "3", "--save", half},
		{"--steps", "6", "--resume", half, "--save", resumed},
	} {
		mainOK(t, append(tc, "--dropout", "0.1")...)
	}
	a, _ := safetensors.ReadFile(whole)
	b, _ := safetensors.ReadFile(resumed)
	if a == nil || b == nil || len(a.Names) == 0 || len(a.Names) != len(b.Names) {
		t.Fatal("snapshots missing or of different sizes")
	}
	for _, n := range a.Names {
		if !bytes.Equal(a.Tensors[n].Data, b.Tensors[n].Data) {
			t.Errorf("tensor %q differs after resuming", n)
		}
	}
	// Resuming the finished run runs no step and reports the snapshot's loss.
	r1, r2 := filepath.Join(dir, "r1.json"), filepath.Join(dir, "r2.json")
	mainOK(t, "--steps", "6", "--resume", resumed, "--report", r1, "--dropout", "0.1")
	mainOK(t, "--steps", "6", "--resume", whole, "--report", r2, "--dropout", "0.1")
	var j1, j2 map[string]any
	for p, j := range map[string]*map[string]any{r1: &j1, r2: &j2} {
		data, _ := os.ReadFile(p)
		json.Unmarshal(data, j)
	}
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
	read := func(p string) map[string]any {
		b, _ := os.ReadFile(p)
		var r map[string]any
		json.Unmarshal(b, &r)
		return r
	}
	pp := read(plain)["peak_bytes"].(map[string]any)["parameter"].(float64)
	rq := read(q)
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
	data, _ := os.ReadFile(rp)
	var r map[string]any
	if err := json.Unmarshal(data, &r); err != nil {
		t.Fatal(err)
	}
	train := 6000 - 600 // SplitSpread(0.1) holds out 600 bytes
	if want := 2 * (train / (4 * 32)); r["steps"] != float64(want) {
		t.Errorf("--epochs 2: %v steps, want %d", r["steps"], want)
	}
	var out, errb bytes.Buffer
	args := []string{"--data", text, "--val-fraction", "0.1", "--steps", "0", "--epochs", "1", "--batch", "64", "--context", "100",
		"--layers", "1", "--width", "16", "--heads", "2"}
	if code := run.Main(args, &out, &errb); code != 1 || !strings.Contains(errb.String(), "--epochs 1") {
		t.Errorf("an epoch without a full batch: exit %d, stderr %q; want 1 and an error naming --epochs", code, errb.String())
	}
}
