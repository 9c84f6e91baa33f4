package bench

import "testing"

// TestActivationRows: the selective and activation-budget rows train the
// example with the technique's flags (the planner's step and the example's
// run hold the same peaks, tag by tag), the budget row on the GPT only,
// within its budget (40% of plain's activation peak).
func TestActivationRows(t *testing.T) {
	techs, err := Select([]string{"selective", "activation budget"})
	if err != nil {
		t.Fatal(err)
	}
	res, err := Run(Config{Mode: Tiny, Techniques: techs})
	if err != nil {
		t.Fatal(err)
	}
	plain := map[string]Row{}
	seen := 0
	for _, r := range res.Rows {
		if r.Technique == "plain" {
			plain[r.Model] = r
			continue
		}
		seen++
		if !r.SamePeak {
			t.Errorf("%s/%s (flags %v): the training run's peaks %+v differ from the measured step's %+v", r.Model, r.Technique, r.Flags, r.TrainPeak, r.Peak)
		}
		if r.Technique == "activation budget" {
			if r.Model != "transformer" {
				t.Errorf("an activation-budget row for %s", r.Model)
			}
			if budget := plain[r.Model].Peak.Activation * 2 / 5; r.Peak.Activation > budget {
				t.Errorf("activation budget %d B: the row's activation peak %d B", budget, r.Peak.Activation)
			}
		}
		t.Logf("%s/%s: activation peak %d B (plain %d B), %v", r.Model, r.Technique, r.Peak.Activation, plain[r.Model].Peak.Activation, r.Flags)
	}
	if seen != 3 {
		t.Errorf("%d technique rows, want selective on both models and the budget on the GPT", seen)
	}
}
