package main

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"

	"github.com/headroom-ml/headroom/plan"
)

// TestFitSplitAgreesWithPlan: fit --split's chosen layout, planned with
// headroom plan --tp --pp --dp at the chosen batch under the capacity,
// fits with the worst rank's peak fit reported.
func TestFitSplitAgreesWithPlan(t *testing.T) {
	common := []string{"--model", "gpt2", "--seq", "32", "--amp", "bf16", "--zero", "1", "--capacity", "800MiB", "--json"}
	out := ok(t, append([]string{"fit", "--split", "--ranks", "8"}, common...)...)
	var r plan.SplitFitResult
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("fit --split --json: %v\n%s", err, out)
	}
	b := r.Best
	if b == nil || b.ModelRanks() < 2 {
		t.Fatalf("fit --split: best %+v: want a split layout under 800MiB\n%s", b, out)
	}
	itoa := strconv.Itoa
	args := append([]string{"plan", "--tp", itoa(b.TP), "--pp", itoa(b.PP), "--dp", itoa(b.DP), "--batch", itoa(b.TargetBatch)}, common...)
	var p planJSON
	if err := json.Unmarshal([]byte(ok(t, args...)), &p); err != nil {
		t.Fatal(err)
	}
	if p.Fits == nil || !*p.Fits || p.PeakBytes != b.TargetPeak {
		t.Errorf("headroom %s: fits %v, peak %d; fit --split reported peak %d", strings.Join(args, " "), p.Fits, p.PeakBytes, b.TargetPeak)
	}
	t.Logf("tp %d pp %d dp %d batch %d: peak %d", b.TP, b.PP, b.DP, b.TargetBatch, p.PeakBytes)
}

// TestFitSplitUsage: --split refuses --tp, --pp, --dp and --measure, and
// fit without --split refuses the technique flags, each as a usage error.
func TestFitSplitUsage(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--split", "--tp", "2"}, "--split --tp"},
		{[]string{"--split", "--dp", "2"}, "--split --dp"},
		{[]string{"--split", "--measure"}, "--measure: not available"},
		{[]string{"--amp", "bf16"}, "--amp: fit chooses"},
		{[]string{"--split", "--model", "small"}, "want a GPT"},
	} {
		args := append([]string{"fit", "--model", "gpt2", "--ranks", "4", "--capacity", "1GiB"}, tc.args...)
		code, _, errs := call(args...)
		if code != 64 || !strings.Contains(errs, tc.want) {
			t.Errorf("headroom %v: exit %d, %q; want 64 and %q", args, code, errs, tc.want)
		}
	}
}
