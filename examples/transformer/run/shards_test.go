package run_test

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/headroom-ml/headroom/examples/transformer/run"
	htrain "github.com/headroom-ml/headroom/train"
	"github.com/headroom-ml/headroom/train/traintest"
)

// shardRun is the tiny GPT of these tests on 2 ranks, with dropout, 4
// steps.
var shardRun = []string{"--ranks", "2", "--steps", "4", "--sample", "0", "--dropout", "0.1"}

// mainCode runs the example with args (no base arguments) and returns its
// exit status and output.
func mainCode(args ...string) (int, string) {
	var out, errb bytes.Buffer
	code := run.Main(args, &out, &errb)
	return code, out.String() + errb.String()
}

// TestRanksResumeIsExact runs 4 steps on 2 ranks straight, and 2 steps,
// a save, --resume alone and 2 more: every rank's shard — its parameters
// or pieces, its optimizer state, its last loss, its scaler, its data
// order and dropout generator — is the uninterrupted run's bit for bit,
// under ZeRO 0–3, offload, fp16 with its loss scaler and bf16 parameters,
// and so is the final loss; and on 3 ranks under ZeRO 3 (pieces padded).
func TestRanksResumeIsExact(t *testing.T) {
	for _, stage := range [][]string{
		{"--zero", "0"}, {"--zero", "1"}, {"--zero", "2"}, {"--zero", "3"},
		{"--zero", "2", "--offload"}, {"--zero", "3", "--offload", "--amp", "bf16", "--amp-params"},
		{"--zero", "1", "--amp", "fp16", "--amp-params", "--accum", "2"},
		{"--zero", "3", "--ranks", "3", "--batch", "6"}, // padded pieces
	} {
		ranks := 2
		if i := slices.Index(stage, "--ranks"); i >= 0 {
			ranks, _ = strconv.Atoi(stage[i+1])
		}
		dir := t.TempDir()
		whole, half, resumed := filepath.Join(dir, "whole"), filepath.Join(dir, "half"), filepath.Join(dir, "resumed")
		r1, r2 := filepath.Join(dir, "r1.json"), filepath.Join(dir, "r2.json")
		args := append(append([]string(nil), shardRun...), stage...)
		mainOK(t, append(args, "--save", whole, "--report", r1)...)
		mainOK(t, append(args, "--stop-after", "2", "--save", half)...)
		code, out := mainCode("--resume", half, "--save", resumed, "--report", r2)
		if code != 0 || !strings.Contains(out, "resumed from step 2 of 4") || !strings.Contains(out, resumed+".rank1-of-") {
			t.Fatalf("%v: --resume alone: exit %d\n%s", stage, code, out)
		}
		traintest.SameShards(t, strings.Join(stage, " "), whole, resumed, ranks)
		if a, b := traintest.ReadReport(t, r1)["final_loss"], traintest.ReadReport(t, r2)["final_loss"]; a != b {
			t.Errorf("%v: final loss %v straight, %v resumed", stage, a, b)
		}
	}
}

// refused runs args, which must fail with exit status code, and returns
// the output, which must hold each of want.
func refused(t *testing.T, code int, want []string, args ...string) string {
	t.Helper()
	got, out := mainCode(args...)
	ok := got == code && !strings.Contains(out, "goroutine ")
	for _, w := range want {
		ok = ok && strings.Contains(out, w)
	}
	if !ok {
		t.Errorf("%q: exit %d, want %d and %q in:\n%s", args, got, code, want, out)
	} else {
		t.Logf("%q: exit %d: %s", args, got, lastLines(out, 3))
	}
	return out
}

// lastLines returns the last n lines of s.
func lastLines(s string, n int) string {
	l := strings.Split(strings.TrimSpace(s), "\n")
	return strings.Join(l[max(len(l)-n, 0):], " | ")
}

// TestRanksSnapshotRefusals checks that a resume is refused, naming the
// problem, when the layout differs (both named), when a sharded snapshot
// is resumed on one device or a single-device one on ranks, when a shard
// is missing (before any work), corrupt (its checksum) or of another save,
// and that a save that fails on one rank leaves the old snapshot as it
// was, with no staged file left.
func TestRanksSnapshotRefusals(t *testing.T) {
	dir := t.TempDir()
	half, whole, single := filepath.Join(dir, "half"), filepath.Join(dir, "whole"), filepath.Join(dir, "single")
	args := append(append([]string(nil), shardRun...), "--zero", "1")
	mainOK(t, append(args, "--stop-after", "2", "--save", half)...)
	mainOK(t, append(args, "--save", whole)...)
	mainOK(t, "--steps", "4", "--sample", "0", "--dropout", "0.1", "--stop-after", "2", "--save", single)
	rank1 := htrain.ShardPath(half, 1, 2)

	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--resume", half, "--zero", "2", "--override"}, "a snapshot of --ranks 2 --zero 1 (rank 0 of 2, ZeRO stage 1, f32 parameters in 3 buckets of [16896 9600 8192] elements), and this run is --ranks 2 --zero 2"},
		{[]string{"--resume", half, "--ranks", "4", "--zero", "2", "--offload", "--override"}, "and this run is --ranks 4 --zero 2 --offload"},
		{[]string{"--resume", half, "--ranks", "1", "--zero", "0", "--override"}, "a shard of a data-parallel snapshot (rank 0 of 2, ZeRO stage 1, f32 parameters in 3 buckets of [16896 9600 8192] elements), and this run is on one device: resume it with --ranks 2 --zero 1"},
		{[]string{"--resume", single, "--ranks", "2", "--zero", "1", "--override"}, "a single-device snapshot, and this run is data-parallel (--ranks 2 --zero 1)"},
	} {
		if out := refused(t, htrain.ExitUsage, []string{c.want}, c.args...); strings.Contains(out, "transformer: GPT") {
			t.Errorf("%q: refused after the model was built:\n%s", c.args, out)
		}
	}
	// The dtype is checked when the shard is read: both layouts named.
	refused(t, htrain.ExitError, []string{"the snapshot was written by rank 1 of 2, ZeRO stage 1, f32 parameters in 3 buckets of [16896 9600 8192] elements; this run is rank 1 of 2, ZeRO stage 1, bf16 parameters in 2 buckets of [26496 8192] elements"},
		"--resume", half, "--amp", "bf16", "--amp-params", "--override")

	refused(t, htrain.ExitUsage, []string{"--resume " + rank1 + ": rank 1's shard of a snapshot of 2 ranks: give rank 0's file, " + half}, "--resume", rank1)
	if err := os.Mkdir(filepath.Join(dir, "x.rank1-of-2"), 0o755); err != nil {
		t.Fatal(err)
	}
	refused(t, htrain.ExitUsage, []string{"rank 1's shard " + filepath.Join(dir, "x.rank1-of-2") + " is a folder"},
		append(append(baseArgs(t), args...), "--save", filepath.Join(dir, "x"))...)

	keep := refuseBadShard(t, half, whole, 1, 2)

	// A save that fails on rank 1 (its staged name is taken by a folder)
	// keeps both old shards.
	old0 := readFile(t, half)
	if err := os.Mkdir(rank1+".new", 0o755); err != nil {
		t.Fatal(err)
	}
	refused(t, htrain.ExitError, []string{"rank 1 could not write its shard; the old snapshot is kept"}, append(append(baseArgs(t), args...), "--save", half)...)
	if !bytes.Equal(readFile(t, half), old0) || !bytes.Equal(readFile(t, rank1), keep) {
		t.Error("a failed save changed the old snapshot")
	}
	if _, err := os.Stat(half + ".new"); !os.IsNotExist(err) {
		t.Errorf("rank 0's staged shard is left behind: %v", err)
	}
	if err := os.Remove(rank1 + ".new"); err != nil {
		t.Fatal(err)
	}
	if code, out := mainCode("--resume", half); code != 0 || !strings.Contains(out, "resumed from step 2 of 4") {
		t.Errorf("the kept snapshot does not resume: exit %d\n%s", code, out)
	}
}

func readFile(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func writeFile(t *testing.T, path string, b []byte) {
	t.Helper()
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestExportAndInit merges the shards of 2-step runs on 2 ranks under
// ZeRO 1, 2, 3 and offload, and on 3 ranks (padded pieces) under ZeRO 3,
// into model files (ExportModel): each equals,
// byte for byte, the model of the same run under ZeRO 0, where every
// rank's file holds every parameter whole. Then --init of a single-device
// run's model starts runs under ZeRO 1 (which reads the whole file) and
// ZeRO 3 (where rank 0 says it read half of the tensor data: its ranges):
// after a step their models are the same, byte for byte, and not the
// model of the run without --init.
func TestExportAndInit(t *testing.T) {
	dir := t.TempDir()
	export := func(name string, args ...string) []byte {
		t.Helper()
		snap, model := filepath.Join(dir, name), filepath.Join(dir, name+".model")
		out := mainOK(t, append(args, "--sample", "0", "--save", snap)...)
		if err := htrain.ExportModel(snap, model); err != nil {
			t.Fatal(err)
		}
		if strings.Contains(strings.Join(args, " "), "--init") && !strings.Contains(out, "init: ") {
			t.Errorf("%v: no init line:\n%s", args, out)
		}
		return readFile(t, model)
	}
	two := []string{"--steps", "2", "--ranks", "2"}
	ref := export("zero0", append(two, "--zero", "0")...)
	for _, stage := range [][]string{{"--zero", "1"}, {"--zero", "2"}, {"--zero", "3"}, {"--zero", "3", "--offload"}, {"--zero", "2", "--offload"}} {
		if got := export("s"+strings.Join(stage, ""), append(two, stage...)...); !bytes.Equal(got, ref) {
			t.Errorf("%v: the merged model differs from ZeRO 0's", stage)
		}
	}
	// 3 ranks: 8192 elements cut into pieces of 2731, one of padding.
	three := []string{"--steps", "2", "--ranks", "3", "--batch", "6"}
	if a, b := export("three0", append(three, "--zero", "0")...), export("three3", append(three, "--zero", "3")...); !bytes.Equal(a, b) {
		t.Error("3 ranks: the merged ZeRO-3 model differs from ZeRO 0's")
	}
	export("single", "--steps", "2")
	m := filepath.Join(dir, "single.model")
	one := []string{"--steps", "1", "--ranks", "2", "--init", m}
	a := export("init1", append(one, "--zero", "1")...)
	b := export("init3", append(one, "--zero", "3")...)
	c := export("noinit3", "--steps", "1", "--ranks", "2", "--zero", "3")
	if !bytes.Equal(a, b) || bytes.Equal(b, c) {
		t.Errorf("--init under ZeRO 1 and 3: same %v; ZeRO 3 with and without --init: same %v (want true, false)", bytes.Equal(a, b), bytes.Equal(b, c))
	}
	for z, want := range map[string]string{"1": "init: " + m + " (135.50 KiB of tensor data read here)", "3": "init: " + m + " (67.75 KiB of tensor data read here)"} {
		if out := mainOK(t, append(one, "--zero", z, "--sample", "0")...); !strings.Contains(out, want) {
			t.Errorf("--zero %s: no %q in\n%s", z, want, out)
		}
	}
	refused(t, htrain.ExitUsage, []string{"--init and --resume: choose one"}, "--resume", filepath.Join(dir, "zero0"), "--init", m)
	refused(t, htrain.ExitUsage, []string{"--init " + filepath.Join(dir, "missing") + ": no such file"}, append(baseArgs(t), "--init", filepath.Join(dir, "missing"))...)
}
