package main

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestPlanLoRA: plan --lora 16 --lora-base int8 on gpt2-xl at 24 GiB
// prints the LoRA heading and a fit statement, full fine-tuning of the
// same model does not fit there, and the JSON's trainable parameters are
// 16·L·r·C (48 blocks of width 1600, r = 16) with gradient bytes 4 each.
func TestPlanLoRA(t *testing.T) {
	out := ok(t, "plan", "--model", "gpt2-xl", "--capacity", "24GiB", "--lora", "16", "--lora-base", "int8")
	if !strings.Contains(out, "LoRA r=16 on all (int8 base)") || !strings.Contains(out, "fits in 24.00 GiB") {
		t.Errorf("plan --lora 16 --lora-base int8:\n%s", out)
	}
	t.Logf("\n%s", out)
	if full := ok(t, "plan", "--model", "gpt2-xl", "--capacity", "24GiB"); strings.Contains(full, "fits in") {
		t.Errorf("gpt2-xl full fine-tuning fits in 24 GiB:\n%s", full)
	}
	var p planJSON
	if err := json.Unmarshal([]byte(ok(t, "plan", "--model", "gpt2-xl", "--lora", "16", "--lora-base", "int8", "--json")), &p); err != nil {
		t.Fatal(err)
	}
	const adapters = 16 * 48 * 16 * 1600
	if p.Params != adapters || p.Ranks[0].Gradient != 4*adapters || p.Techniques["lora_base"] != "int8" {
		t.Errorf("json: %d parameters, gradient peak %d, techniques %v; want %d, 4·%d, lora_base int8", p.Params, p.Ranks[0].Gradient, p.Techniques, adapters, adapters)
	}
}
