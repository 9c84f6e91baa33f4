package run_test

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	htrain "github.com/headroom-ml/headroom/train"
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
// pp2, dp2×tp2×pp2 with ZeRO-1, tp2 with fp16 loss scaling, tp2 with
// sequence parallelism and checkpointing, and dp2×pp2 (GPipe) with ZeRO-2.
func TestSplitResumeIsExact(t *testing.T) {
	for _, tc := range []struct {
		layout []string
		ranks  int
	}{
		{[]string{"--tp", "2"}, 2},
		{[]string{"--pp", "2", "--accum", "2"}, 2},
		{[]string{"--tp", "2", "--pp", "2", "--ranks", "8", "--zero", "1", "--accum", "2"}, 8},
		{[]string{"--tp", "2", "--amp", "fp16", "--amp-params"}, 2},
		{[]string{"--tp", "2", "--sequence-parallel", "--checkpoint"}, 2},
		{[]string{"--pp", "2", "--accum", "2", "--pipe-schedule", "gpipe", "--ranks", "4", "--zero", "2"}, 4},
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

// TestSplitSnapshotRefusals checks that a split snapshot is refused,
// naming the problem, when resumed with another layout (both named), on
// one device, or by a split run from a single-device or data-parallel
// snapshot, all before the model is built; when a shard is missing
// (before any work), corrupt (its checksum, naming the file) or of
// another save; and that a save that fails on one rank leaves the old
// snapshot as it was, with no staged file left, and still resumes.
func TestSplitSnapshotRefusals(t *testing.T) {
	dir := t.TempDir()
	half, whole, single, dp := filepath.Join(dir, "half"), filepath.Join(dir, "whole"), filepath.Join(dir, "single"), filepath.Join(dir, "dp")
	args := append(append([]string(nil), splitSnapRun...), "--tp", "2", "--pp", "2", "--ranks", "8", "--zero", "1", "--accum", "2")
	mainOK(t, append(args, "--stop-after", "2", "--save", half)...)
	mainOK(t, append(args, "--save", whole)...)
	mainOK(t, append(append([]string(nil), splitSnapRun...), "--stop-after", "2", "--save", single)...)
	mainOK(t, append(append([]string(nil), splitSnapRun...), "--ranks", "2", "--stop-after", "2", "--save", dp)...)
	rank5 := htrain.ShardPath(half, 5, 8)
	// Export would write rank 0's slices as if they were the model: refused.
	if err := htrain.ExportModel(half, filepath.Join(dir, "model")); err == nil || !strings.Contains(err.Error(), "a split snapshot (--tp 2 --pp 2 --ranks 8 --zero 1): export is not available yet") {
		t.Errorf("export of a split snapshot: %v", err)
	}

	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--resume", half, "--tp", "1", "--ranks", "4", "--override"}, "a split snapshot of --tp 2 --pp 2 --ranks 8 --zero 1, and this run is --tp 1 --pp 2 --ranks 4 --zero 1"},
		{[]string{"--resume", half, "--zero", "0", "--override"}, "and this run is --tp 2 --pp 2 --ranks 8 --zero 0"},
		{[]string{"--resume", half, "--tp", "1", "--pp", "1", "--ranks", "1", "--zero", "0", "--override"}, "a split snapshot of --tp 2 --pp 2 --ranks 8 --zero 1, and this run is not split"},
		{[]string{"--resume", single, "--tp", "2", "--override"}, "not a split snapshot, and this run is --tp 2 --pp 1 --ranks 2 --zero 0"},
		{[]string{"--resume", dp, "--tp", "2", "--override"}, "not a split snapshot, and this run is --tp 2 --pp 1 --ranks 2 --zero 0"},
	} {
		if out := refused(t, htrain.ExitUsage, []string{c.want}, c.args...); strings.Contains(out, "transformer: GPT") {
			t.Errorf("%q: refused after the model was built:\n%s", c.args, out)
		}
	}

	refuseBadShard(t, half, whole, 5, 8)

	// A save that fails on world rank 5 (its staged name is taken by a
	// folder) keeps every old file.
	old := make([][]byte, 8)
	for r := range old {
		old[r] = readFile(t, htrain.ShardPath(half, r, 8))
	}
	if err := os.Mkdir(rank5+".new", 0o755); err != nil {
		t.Fatal(err)
	}
	refused(t, htrain.ExitError, []string{"world rank 5 failed; the old state is kept"}, append(args, "--save", half)...)
	for r := range old {
		if !bytes.Equal(readFile(t, htrain.ShardPath(half, r, 8)), old[r]) {
			t.Errorf("a failed save changed world rank %d's file", r)
		}
	}
	if _, err := os.Stat(half + ".new"); !os.IsNotExist(err) {
		t.Errorf("rank 0's staged file is left behind: %v", err)
	}
	if err := os.Remove(rank5 + ".new"); err != nil {
		t.Fatal(err)
	}
	if code, out := mainCode("--resume", half); code != 0 || !strings.Contains(out, "resumed from step 2 of 4") {
		t.Errorf("the kept snapshot does not resume: exit %d\n%s", code, out)
	}
}

// refuseBadShard checks that --resume half (a snapshot of n ranks) is
// refused, naming rank q's file, when that file is missing (before the
// model is built), of another save (whole's) or corrupt (a bit of its last
// tensor flipped); it puts the file back and returns its bytes.
func refuseBadShard(t *testing.T, half, whole string, q, n int) []byte {
	t.Helper()
	file := htrain.ShardPath(half, q, n)
	keep := readFile(t, file)
	if err := os.Rename(file, file+".away"); err != nil {
		t.Fatal(err)
	}
	out := refused(t, htrain.ExitUsage, []string{fmt.Sprintf("a snapshot of %d ranks, but rank %d's shard %s: no such file", n, q, file)}, "--resume", half)
	if strings.Contains(out, "transformer: GPT") {
		t.Errorf("the missing shard was found after the model was built:\n%s", out)
	}
	writeFile(t, file, readFile(t, htrain.ShardPath(whole, q, n)))
	refused(t, htrain.ExitError, []string{half + " and " + file + " are shards of different saves"}, "--resume", half)
	bad := bytes.Clone(keep)
	bad[len(bad)-3] ^= 0x10 // a bit of the last tensor's data
	writeFile(t, file, bad)
	refused(t, htrain.ExitError, []string{"resume from " + file + ": nn.ReadTensors", "CRC-32C", "the file is corrupt"}, "--resume", half)
	writeFile(t, file, keep)
	return keep
}

// TestSplitExportPipeline: the model exported from a --pp 2 snapshot (its
// stages' files merged) is, byte for byte, the model exported from the
// one-device run of the same untied model and micro-batches (which --pp
// matches bit for bit), also with 2 data-parallel copies; --tp is refused.
func TestSplitExportPipeline(t *testing.T) {
	dir := t.TempDir()
	export := func(name string, args ...string) []byte {
		t.Helper()
		snap, model := filepath.Join(dir, name), filepath.Join(dir, name+".model")
		mainOK(t, append(append(append([]string(nil), splitSnapRun...), "--dropout", "0", "--clip", "0", "--save", snap), args...)...)
		if err := htrain.ExportModel(snap, model); err != nil {
			t.Fatal(err)
		}
		return readFile(t, model)
	}
	one := export("one", "--accum", "2")
	if pp := export("pp", "--accum", "2", "--pp", "2"); !bytes.Equal(pp, one) {
		t.Error("--pp 2: the exported model is not the one-device run's")
	}
	if dp := export("dppp", "--accum", "1", "--pp", "2", "--ranks", "4"); !bytes.Equal(dp, export("one4", "--accum", "2")) {
		t.Error("--pp 2 --ranks 4: the exported model is not the one-device run's")
	}
	tp := filepath.Join(dir, "tp")
	mainOK(t, append(append([]string(nil), splitSnapRun...), "--tp", "2", "--save", tp)...)
	if err := htrain.ExportModel(tp, tp+".model"); err == nil || !strings.Contains(err.Error(), "export is not available yet for --tp") {
		t.Errorf("export of a --tp snapshot: %v", err)
	}
}
