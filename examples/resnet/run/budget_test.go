package run_test

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/headroom-ml/headroom/train/traintest"
)

// TestActivationBudget: under --activation-budget at 85% and 70% of
// plain's measured activation peak the run's measured activation peak is
// within the budget and equals the peak planned on meta byte for byte;
// the decision table has a row for the stem and each of the 3 blocks.
func TestActivationBudget(t *testing.T) {
	dir := t.TempDir()
	peakOf := func(path string) (measured, planned int64) {
		r := traintest.ReadReport(t, path)
		measured = int64(r["peak_bytes"].(map[string]any)["activation"].(float64))
		if b, ok := r["extra"].(map[string]any)["activation_budget"].(map[string]any); ok {
			planned = int64(b["planned_activation_peak_bytes"].(float64))
		}
		return measured, planned
	}
	plainPath := filepath.Join(dir, "plain.json")
	mainOK(t, "--steps", "2", "--report", plainPath)
	plain, _ := peakOf(plainPath)
	for _, frac := range []float64{0.85, 0.7} {
		budget := int64(frac * float64(plain))
		path := filepath.Join(dir, fmt.Sprintf("b%.0f.json", 100*frac))
		out := mainOK(t, "--steps", "2", "--activation-budget", fmt.Sprint(budget), "--report", path)
		got, planned := peakOf(path)
		t.Logf("budget %d B (%.0f%% of plain's %d B): measured %d B, planned %d B", budget, 100*frac, plain, got, planned)
		if got > budget || got != planned {
			t.Errorf("budget %d B: measured activation peak %d B, planned %d B: want equal and within the budget", budget, got, planned)
		}
		if !strings.Contains(out, "layer  mode") || !strings.Contains(out, "\n3      ") {
			t.Errorf("no decision table over the stem and 3 blocks:\n%s", out)
		}
	}
}
