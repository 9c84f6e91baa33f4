package run_test

import (
	"bytes"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/headroom-ml/headroom/checkpoint"
	"github.com/headroom-ml/headroom/examples/transformer/run"
	"github.com/headroom-ml/headroom/plan"
	"github.com/headroom-ml/headroom/train/traintest"
)

// budgetArgs run the example's default GPT (plan's "transformer") at
// batch 4, context 16, with the planner's default rates, so that the
// example and headroom plan solve the same problem.
func budgetArgs(t *testing.T, path string, more ...string) []string {
	r := checkpoint.DefaultRates
	return append([]string{"--data", corpus(t), "--batch", "4", "--context", "16", "--steps", "2", "--eval-batches", "1", "--sample", "0",
		"--flop-rate", fmt.Sprint(r.FLOPS), "--memory-rate", fmt.Sprint(r.Memory), "--copy-rate", fmt.Sprint(r.Copy), "--report", path}, more...)
}

// activationOf runs the example and returns its report's measured
// activation peak and its plan's.
func activationOf(t *testing.T, args []string) (measured, planned int64, out string) {
	t.Helper()
	var o, e bytes.Buffer
	if code := run.Main(args, &o, &e); code != 0 {
		t.Fatalf("transformer %v: exit %d\n%s%s", args, code, o.String(), e.String())
	}
	r := traintest.ReadReport(t, args[len(args)-1])
	if len(args) > 0 && !strings.HasSuffix(args[len(args)-1], ".json") {
		t.Fatal("the report path must come last")
	}
	measured = int64(r["peak_bytes"].(map[string]any)["activation"].(float64))
	if b, ok := r["extra"].(map[string]any)["activation_budget"].(map[string]any); ok {
		planned = int64(b["planned_activation_peak_bytes"].(float64))
	}
	return measured, planned, o.String()
}

// TestActivationBudgetRun: under --activation-budget at 60% and 40% of
// plain's measured activation peak the run's measured activation peak is
// within the budget, equals the peak planned on meta byte for byte, and
// equals what headroom plan predicts for the same budget; the decision
// table is printed.
func TestActivationBudgetRun(t *testing.T) {
	dir := t.TempDir()
	plainPath := filepath.Join(dir, "plain.json")
	plain, _, _ := activationOf(t, append(budgetArgs(t, plainPath)[:16], "--report", plainPath))
	for _, frac := range []float64{0.6, 0.4} {
		budget := int64(frac * float64(plain))
		path := filepath.Join(dir, fmt.Sprintf("b%.0f.json", 100*frac))
		args := budgetArgs(t, path)
		args = append(args[:len(args)-2], "--activation-budget", fmt.Sprint(budget), "--report", path)
		got, planned, out := activationOf(t, args)
		pred, err := plan.Predict(plan.Config{Model: "transformer", Batch: 4, Seq: 16, ActivationBudget: budget})
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("budget %d B (%.0f%% of plain's %d B): measured %d B, planned %d B, headroom plan %d B, modes %v", budget, 100*frac, plain, got, planned, pred.Ranks[0].Activation, checkpoint.Modes(pred.ActivationBudget.Decisions))
		if got > budget || got != planned || got != pred.Ranks[0].Activation {
			t.Errorf("budget %d B: measured activation peak %d B, planned %d B, headroom plan %d B: want equal and within the budget", budget, got, planned, pred.Ranks[0].Activation)
		}
		if !strings.Contains(out, "layer  mode") || !strings.Contains(out, "est. extra time per step") {
			t.Errorf("no decision table in the output:\n%s", out)
		}
	}
}

// TestActivationBudgetTooSmall: a budget below what every layer at its
// most saving mode reaches fails before training with an error naming
// the smallest budget, and that budget then runs within itself.
func TestActivationBudgetTooSmall(t *testing.T) {
	path := filepath.Join(t.TempDir(), "r.json")
	args := budgetArgs(t, path)
	args = append(args[:len(args)-2], "--activation-budget", "1000", "--report", path)
	var o, e bytes.Buffer
	code := run.Main(args, &o, &e)
	var smallest int64
	i := strings.Index(e.String(), "works with that choice is ")
	if i >= 0 {
		fmt.Sscanf(e.String()[i+len("works with that choice is "):], "%d", &smallest)
	}
	if code != 1 || smallest <= 1000 || strings.Contains(o.String(), "step 1/") {
		t.Fatalf("exit %d, smallest %d; want 1, an error naming the smallest budget and no step trained\nstdout:\n%s\nstderr:\n%s", code, smallest, o.String(), e.String())
	}
	t.Log(strings.TrimSpace(e.String()))
	args[len(args)-3] = fmt.Sprint(smallest)
	if got, _, _ := activationOf(t, args); got > smallest {
		t.Errorf("at the smallest budget %d B: measured activation peak %d B", smallest, got)
	}
}

// TestActivationBudgetRefused: bad values and combinations are usage
// errors (exit 64) naming the flag, before anything runs.
func TestActivationBudgetRefused(t *testing.T) {
	for _, tc := range [][]string{
		{"--activation-budget", "lots"},
		{"--activation-budget", "1MiB", "--selective"},
		{"--activation-budget", "1MiB", "--checkpoint"},
		{"--activation-budget", "1MiB", "--ranks", "2"},
		{"--activation-budget", "1MiB", "--copy-rate", "-1"},
	} {
		var o, e bytes.Buffer
		code := run.Main(append([]string{"--data", corpus(t), "--steps", "1"}, tc...), &o, &e)
		if code != 64 || !strings.Contains(e.String(), "--activation-budget") && !strings.Contains(e.String(), "--copy-rate") {
			t.Errorf("%v: exit %d, stderr %q; want 64 naming the flag", tc, code, e.String())
		}
	}
}
