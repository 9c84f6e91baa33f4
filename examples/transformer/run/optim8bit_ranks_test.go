package run_test

import (
	"bytes"
	"math"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/headroom-ml/headroom/examples/transformer/run"
	"github.com/headroom-ml/headroom/train"
)

// TestAdamW8bitRanks: --optimizer adamw8bit trains under --ranks 2 with
// ZeRO 1 and 2 (bf16 with f32 masters), each rank holding at most 0.55 of
// one rank's 8-bit optimizer peak (with masters: of it plus 4n) — its
// pieces' state, about half.
func TestAdamW8bitRanks(t *testing.T) {
	base := []string{"--steps", "2", "--batch", "8", "--sample", "0", "--width", "64", "--optimizer", "adamw8bit"}
	one := report(t, base...)
	for _, extra := range [][]string{{"--zero", "1"}, {"--zero", "2", "--amp", "bf16", "--amp-params"}} {
		r := report(t, append(append(base, "--ranks", "2"), extra...)...)
		ratio := peak(r, "optimizer") / peak(one, "optimizer")
		if slices.Contains(extra, "--amp-params") { // the f32 masters' 4n bytes are one f32 rank's parameter bytes
			ratio = peak(r, "optimizer") / (peak(one, "optimizer") + peak(one, "parameter"))
		}
		if !(ratio > 0 && ratio <= 0.55) || !(r["final_loss"].(float64) > 0) {
			t.Errorf("%v: optimizer peak %v (%.4f× one rank's), final loss %v", extra, peak(r, "optimizer"), ratio, r["final_loss"])
		}
		t.Logf("%v: optimizer peak %v against one rank's %v (%.4f×)", extra, peak(r, "optimizer"), peak(one, "optimizer"), ratio)
	}
}

// TestAdamW8bitRanksResume interrupts a --ranks 2 --zero 1 adamw8bit run
// after 2 of 4 steps and resumes it: every rank's final snapshot (its
// pieces, 8-bit codes and absmax) equals the uninterrupted run's bit for
// bit.
func TestAdamW8bitRanksResume(t *testing.T) {
	dir := t.TempDir()
	args := []string{"--steps", "4", "--batch", "8", "--sample", "0", "--width", "64", "--optimizer", "adamw8bit", "--ranks", "2", "--zero", "1"}
	whole, half, resumed := filepath.Join(dir, "whole"), filepath.Join(dir, "half"), filepath.Join(dir, "resumed")
	mainOK(t, append(args, "--save", whole)...)
	mainOK(t, append(args, "--stop-after", "2", "--save", half)...)
	var out, errb bytes.Buffer
	if code := run.Main([]string{"--resume", half, "--save", resumed}, &out, &errb); code != 0 || !strings.Contains(out.String(), "resumed from step 2 of 4") {
		t.Fatalf("--resume: exit %d\n%s%s", code, out.String(), errb.String())
	}
	for r := range 2 {
		a := sameSnapshots(t, train.ShardPath(whole, r, 2), train.ShardPath(resumed, r, 2))
		found := false
		for _, n := range a.Names {
			found = found || strings.Contains(n, "exp_avg_absmax")
		}
		if !found {
			t.Errorf("rank %d's snapshot has no 8-bit state: %v", r, a.Names)
		}
	}
}

// TestAdamW8bitSplit: --optimizer adamw8bit trains over tensor- and
// pipeline-parallel meshes (with data parallelism, ZeRO 1, bf16 masters):
// the final loss is within 2% of one rank's and every rank holds less
// optimizer state than one rank does alone (without masters).
func TestAdamW8bitSplit(t *testing.T) {
	base := []string{"--steps", "2", "--batch", "8", "--sample", "0", "--width", "64", "--optimizer", "adamw8bit"}
	one := report(t, base...)
	for _, extra := range [][]string{{"--tp", "2"}, {"--pp", "2"}, {"--tp", "2", "--pp", "2", "--ranks", "8"}, {"--tp", "2", "--ranks", "4", "--zero", "1"},
		{"--tp", "2", "--ranks", "4", "--zero", "1", "--amp", "bf16", "--amp-params"}} {
		r := report(t, append(base, extra...)...)
		loss, want := r["final_loss"].(float64), one["final_loss"].(float64)
		if !(math.Abs(loss-want) <= 0.02*want) {
			t.Errorf("%v: final loss %v, one rank's %v: want within 2%%", extra, loss, want)
		}
		if !slices.Contains(extra, "--amp-params") && !(peak(r, "optimizer") < peak(one, "optimizer")) {
			t.Errorf("%v: optimizer peak %v, one rank's %v: want less", extra, peak(r, "optimizer"), peak(one, "optimizer"))
		}
		t.Logf("%v: optimizer peak %v (one rank %v), final loss %v (one rank %v)", extra, peak(r, "optimizer"), peak(one, "optimizer"), loss, want)
	}
}
