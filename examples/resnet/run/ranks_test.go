package run_test

import (
	"bytes"
	"encoding/json"
	"math"
	"path/filepath"
	"strings"
	"testing"

	"github.com/headroom-ml/headroom/examples/resnet/run"
	"github.com/headroom-ml/headroom/safetensors"
	htrain "github.com/headroom-ml/headroom/train"
	"github.com/headroom-ml/headroom/train/traintest"
)

// report runs the example with args and returns its JSON report.
func report(t *testing.T, args ...string) map[string]any {
	t.Helper()
	path := filepath.Join(t.TempDir(), "r.json")
	mainOK(t, append(args, "--report", path)...)
	return traintest.ReadReport(t, path)
}

func peak(r map[string]any, tag string) float64 {
	return r["peak_bytes"].(map[string]any)[tag].(float64)
}

// TestRanksZeroAndOffload trains the small ResNet on synthetic images on
// 1 and 2 ranks: two ranks under ZeRO-1 and ZeRO-3 (checkpointed) match
// one device's loss (batch-norm statistics are per rank, so only closely)
// with half of its optimizer state on rank 0 — under ZeRO-3 half of its
// parameters too —, ZeRO-2 with offload leaves no optimizer bytes on the
// compute device and puts them on the host, and every rank is reported.
func TestRanksZeroAndOffload(t *testing.T) {
	base := []string{"--dataset", "synthetic", "--steps", "2", "--batch", "8"}
	one := report(t, base...)
	zero1 := report(t, append(base, "--ranks", "2", "--zero", "1")...)
	zero3 := report(t, append(base, "--ranks", "2", "--zero", "3", "--checkpoint")...)
	off := report(t, append(base, "--ranks", "2", "--zero", "2", "--offload", "--amp", "bf16", "--amp-params")...)
	for _, r := range []map[string]any{zero1, zero3} {
		if d := math.Abs(r["final_loss"].(float64) - one["final_loss"].(float64)); d > 0.05 {
			t.Errorf("%v: final loss %v, one rank %v", r["flags"], r["final_loss"], one["final_loss"])
		}
	}
	for _, tag := range []string{"parameter", "optimizer"} {
		if got := peak(zero3, tag) / peak(one, tag); math.Abs(got-0.5) > 0.01 {
			t.Errorf("zero 3 on 2 ranks: %s peak %.4f× one rank's, want 0.50×", tag, got)
		}
	}
	if got := peak(zero1, "optimizer") / peak(one, "optimizer"); math.Abs(got-0.5) > 0.01 {
		t.Errorf("zero 1 on 2 ranks: optimizer peak %.4f× one rank's, want 0.50×", got)
	}
	if peak(off, "optimizer") != 0 {
		t.Errorf("offload: %v optimizer bytes on the compute device", peak(off, "optimizer"))
	}
	hosts, ok := off["extra"].(map[string]any)["host_ranks"].([]any)
	if !ok || len(hosts) != 2 || hosts[1].(map[string]any)["optimizer"].(float64) == 0 {
		t.Errorf("offload: host peaks %v", off["extra"].(map[string]any)["host_ranks"])
	}
	for _, r := range []map[string]any{zero1, off} {
		ranks, _ := r["extra"].(map[string]any)["ranks"].([]any)
		if len(ranks) != 2 || ranks[0].(map[string]any)["total"] != r["peak_bytes"].(map[string]any)["total"] {
			t.Errorf("extra.ranks = %v, want 2 ranks, rank 0's peaks first", ranks)
		}
	}
	t.Logf("optimizer peak: one rank %v, zero 1 %v; offload host %v", peak(one, "optimizer"), peak(zero1, "optimizer"), hosts)
}

// TestRanksResumeIsExact runs 4 steps on 2 ranks straight, and 2 steps, a
// save, --resume alone and 2 more: every rank's shard — its pieces, the
// batch norms' running statistics, its optimizer state, its record — is
// the uninterrupted run's bit for bit, and so are the final loss and the
// evaluation (which reads the running statistics), under ZeRO 1, 3 and
// offload with fp16 parameters and the loss scaler.
func TestRanksResumeIsExact(t *testing.T) {
	for _, stage := range [][]string{{"--zero", "1"}, {"--zero", "3"}, {"--zero", "2", "--offload", "--amp", "fp16", "--amp-params"}} {
		dir := t.TempDir()
		whole, half, resumed := filepath.Join(dir, "whole"), filepath.Join(dir, "half"), filepath.Join(dir, "resumed")
		args := append([]string{"--steps", "4", "--ranks", "2"}, stage...)
		r1, r2 := filepath.Join(dir, "r1.json"), filepath.Join(dir, "r2.json")
		mainOK(t, append(args, "--save", whole, "--report", r1)...)
		mainOK(t, append(args, "--stop-after", "2", "--save", half)...)
		var out, errb bytes.Buffer
		if code := run.Main([]string{"--resume", half, "--save", resumed, "--report", r2}, &out, &errb); code != 0 || !strings.Contains(out.String(), "resumed from step 2 of 4") {
			t.Fatalf("%v: --resume alone: exit %d\n%s%s", stage, code, out.String(), errb.String())
		}
		traintest.SameShards(t, strings.Join(stage, " "), whole, resumed, 2)
		runningStats(t, whole, 2)
		// The evaluation reads the running statistics: restored, it is the same.
		a, b := traintest.ReadReport(t, r1), traintest.ReadReport(t, r2)
		if a["eval"] != b["eval"] || a["final_loss"] != b["final_loss"] {
			t.Errorf("%v: eval %v and final loss %v straight, %v and %v resumed", stage, a["eval"], a["final_loss"], b["eval"], b["final_loss"])
		}
	}
}

// runningStats fails unless every rank's shard of the snapshot path holds
// a running mean and variance for each batch norm: one per 1-D ".weight"
// of the layout's parameters.
func runningStats(t *testing.T, path string, ranks int) {
	t.Helper()
	for r := range ranks {
		f, err := safetensors.ReadFile(htrain.ShardPath(path, r, ranks))
		if err != nil {
			t.Fatal(err)
		}
		var snap htrain.Snapshot
		if err := json.Unmarshal([]byte(f.Metadata["headroom.snapshot"]), &snap); err != nil || snap.Shard == nil {
			t.Fatalf("rank %d: record %v, %v", r, err, snap.Shard)
		}
		norms := 0
		for _, p := range snap.Shard.Params {
			if strings.HasSuffix(p.Name, ".weight") && len(p.Shape) == 1 {
				norms++
				for _, s := range []string{"running_mean", "running_var"} {
					if _, ok := f.Tensors["model."+strings.TrimSuffix(p.Name, "weight")+s]; !ok {
						t.Errorf("rank %d: no %s of %s in the shard", r, s, p.Name)
					}
				}
			}
		}
		if norms == 0 {
			t.Errorf("rank %d: no batch norm in the layout", r)
		}
	}
}
