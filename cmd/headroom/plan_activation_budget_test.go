package main

import (
	"bytes"
	"strings"
	"testing"
)

// TestPlanActivationBudget: headroom plan prints the decision table under
// a budget, and a budget too small fails naming the smallest that works.
func TestPlanActivationBudget(t *testing.T) {
	var out, errs bytes.Buffer
	args := []string{"--model", "transformer", "--batch", "4", "--seq", "16"}
	if err := cmdPlan(append(args, "--activation-budget", "900000"), &out, &errs); err != nil {
		t.Fatal(err)
	}
	if s := out.String(); !strings.Contains(s, "activation budget 878.91 KiB: planned activation peak") || !strings.Contains(s, "recompute") {
		t.Fatalf("no decision table:\n%s", s)
	}
	err := cmdPlan(append(args, "--activation-budget", "1KiB"), &out, &errs)
	if err == nil || !strings.Contains(err.Error(), "the smallest budget that works") {
		t.Fatalf("err %v; want the smallest budget named", err)
	}
	if err := cmdPlan(append(args, "--activation-budget", "1GiB", "--selective"), &out, &errs); err == nil {
		t.Fatal("--activation-budget with --selective planned")
	}
}
