package run_test

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"

	"github.com/headroom-ml/headroom/examples/transformer/run"
	"github.com/headroom-ml/headroom/safetensors"
	htrain "github.com/headroom-ml/headroom/train"
	"github.com/headroom-ml/headroom/train/traintest"
)

// TestLoRARun fine-tunes baseArgs' model (2 blocks of width 32) from an
// --init file with --lora 4, float and int8 base, and checks the report:
// 16·L·r·C trainable parameters, gradient and AdamW peaks of exactly 4 and
// 8 bytes each, against full fine-tuning's 4 and 8 per parameter — the
// allocator's bytes, closed form.
func TestLoRARun(t *testing.T) {
	dir := t.TempDir()
	snap, model := filepath.Join(dir, "base.snap"), filepath.Join(dir, "base.safetensors")
	mainOK(t, "--steps", "2", "--save", snap)
	if err := htrain.ExportModel(snap, model); err != nil {
		t.Fatal(err)
	}
	const adapters = 16 * 2 * 4 * 32 // 16·L·r·C
	for _, base := range []string{"float", "int8"} {
		path := filepath.Join(dir, base+".json")
		mainOK(t, "--steps", "2", "--init", model, "--lora", "4", "--lora-base", base, "--report", path)
		r := traintest.ReadReport(t, path)
		peaks := r["peak_bytes"].(map[string]any)
		rec := r["extra"].(map[string]any)["lora"].(map[string]any)
		if rec["base"] != base || rec["trainable_params"].(float64) != adapters || rec["adapters"].(float64) != 8 {
			t.Errorf("--lora-base %s: report record %v; want base %s, %d trainable parameters, 8 adapters", base, rec, base, adapters)
		}
		if r["params"].(float64) != adapters || peaks["gradient"].(float64) != 4*adapters || peaks["optimizer"].(float64) != 8*adapters {
			t.Errorf("--lora 4 --lora-base %s: %v trainable parameters, gradient peak %v, optimizer peak %v; want %d, 4·%d, 8·%d",
				base, r["params"], peaks["gradient"], peaks["optimizer"], adapters, adapters, adapters)
		}
	}
}

// TestLoRARefusals checks the --lora flags' errors and the combinations
// --lora does not run with.
func TestLoRARefusals(t *testing.T) {
	base := []string{"--steps", "2", "--batch", "8", "--context", "16", "--layers", "1", "--width", "32", "--heads", "2"}
	traintest.Refused(t, run.Main, base, []traintest.Refusal{
		traintest.Refuse("--lora -1", "--lora -1: want a rank ≥ 1, or 0"),
		traintest.Refuse("--lora-alpha 16", "--lora-alpha 16: want --lora R with --lora-alpha"),
		traintest.Refuse("--lora-base int8", "--lora-base int8: want --lora R with --lora-base"),
		traintest.Refuse("--lora 4 --lora-base int4", `--lora 4: lora base "int4": want float or int8`),
		traintest.Refuse("--lora 4 --lora-targets attn,ffn", `--lora 4: lora target "ffn": want one of attn.c_attn`),
		traintest.Refuse("--lora 4 --lora-alpha -1", "--lora 4: lora alpha -1: want a finite value ≥ 0"),
		traintest.Refuse("--lora 4 --lora-dropout 1", "--lora 4: lora dropout 1: want a probability in [0, 1)"),
		traintest.Refuse("--lora 4 --ranks 2", "--lora 4: want one device"),
		traintest.Refuse("--lora 4 --quantize int8", "--quantize int8: want no --quantize with --lora"),
		traintest.Refuse("--lora 4 --optimizer adamw8bit", "--optimizer adamw8bit: want adamw with --lora"),
	})
}

// TestLoRAResume interrupts a --lora 4 --lora-base int8 run with adapter
// dropout after 2 of 4 steps and resumes it with --resume alone: the final
// snapshot (adapters, INT8 base, AdamW state, generators) equals the
// uninterrupted run's bit for bit.
func TestLoRAResume(t *testing.T) {
	dir := t.TempDir()
	snap, model := filepath.Join(dir, "base.snap"), filepath.Join(dir, "base.safetensors")
	mainOK(t, "--steps", "2", "--save", snap)
	if err := htrain.ExportModel(snap, model); err != nil {
		t.Fatal(err)
	}
	whole, half, resumed := filepath.Join(dir, "whole"), filepath.Join(dir, "half"), filepath.Join(dir, "resumed")
	lora := []string{"--init", model, "--lora", "4", "--lora-base", "int8", "--lora-dropout", "0.1", "--steps", "4"}
	mainOK(t, append(lora, "--save", whole)...)
	mainOK(t, append(lora, "--stop-after", "2", "--save", half)...)
	var out, errb bytes.Buffer
	if code := run.Main([]string{"--resume", half, "--save", resumed}, &out, &errb); code != 0 || !strings.Contains(out.String(), "resumed from step 2 of 4") {
		t.Fatalf("--resume alone: exit %d\n%s%s", code, out.String(), errb.String())
	}
	a := sameSnapshots(t, whole, resumed)
	if _, ok := a.Tensors["model.gpt.transformer.h.0.attn.c_attn.lora_A.weight"]; !ok {
		t.Errorf("the snapshot has no adapter tensors: %v", a.Names[:4])
	}
}

// sameSnapshots fails the test unless the snapshot files at whole and
// resumed hold the same tensors bit for bit, and returns the first.
func sameSnapshots(t *testing.T, whole, resumed string) *safetensors.File {
	t.Helper()
	a, err := safetensors.ReadFile(whole)
	if err != nil {
		t.Fatal(err)
	}
	b, err := safetensors.ReadFile(resumed)
	if err != nil {
		t.Fatal(err)
	}
	if len(a.Names) == 0 || len(a.Names) != len(b.Names) {
		t.Fatalf("snapshots of %d and %d tensors", len(a.Names), len(b.Names))
	}
	for _, n := range a.Names {
		if !bytes.Equal(a.Tensors[n].Data, b.Tensors[n].Data) {
			t.Errorf("tensor %q differs after resuming", n)
		}
	}
	return a
}
