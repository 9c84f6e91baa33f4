package run_test

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/headroom-ml/headroom/train/traintest"
)

// splitSnapRun is the tiny GPT of the split-snapshot tests: 4 steps, with
// dropout (each rank's generator is in its file), untied embeddings.
var splitSnapRun = []string{"--steps", "4", "--sample", "0", "--dropout", "0.1", "--tie-embeddings=false"}

// TestSplitResumeIsExact runs 4 steps of a split layout straight, and 2
// steps with --stop-after, a save, --resume alone and 2 more: every
// rank's file — its parameter shards or stage, its optimizer state, its
// last loss, its scaler, its sampler and dropout generator — is the
// uninterrupted run's bit for bit, and so is the final loss, under tp2,
// pp2, dp2×tp2×pp2 with ZeRO-1 and tp2 with fp16 loss scaling.
func TestSplitResumeIsExact(t *testing.T) {
	for _, tc := range []struct {
		layout []string
		ranks  int
	}{
		{[]string{"--tp", "2"}, 2},
		{[]string{"--pp", "2", "--accum", "2"}, 2},
		{[]string{"--tp", "2", "--pp", "2", "--ranks", "8", "--zero", "1", "--accum", "2"}, 8},
		{[]string{"--tp", "2", "--amp", "fp16", "--amp-params"}, 2},
	} {
		dir := t.TempDir()
		whole, half, resumed := filepath.Join(dir, "whole"), filepath.Join(dir, "half"), filepath.Join(dir, "resumed")
		r1, r2 := filepath.Join(dir, "r1.json"), filepath.Join(dir, "r2.json")
		args := append(append([]string(nil), splitSnapRun...), tc.layout...)
		mainOK(t, append(args, "--save", whole, "--report", r1)...)
		mainOK(t, append(args, "--stop-after", "2", "--save", half)...)
		code, out := mainCode("--resume", half, "--save", resumed, "--report", r2)
		if code != 0 || !strings.Contains(out, "resumed from step 2 of 4") {
			t.Fatalf("%v: --resume alone: exit %d\n%s", tc.layout, code, out)
		}
		traintest.SameShards(t, strings.Join(tc.layout, " "), whole, resumed, tc.ranks)
		a, b := traintest.ReadReport(t, r1)["final_loss"], traintest.ReadReport(t, r2)["final_loss"]
		if a != b {
			t.Errorf("%v: final loss %v straight, %v resumed", tc.layout, a, b)
		}
		t.Logf("%v: final loss %v straight and resumed", tc.layout, a)
	}
}
