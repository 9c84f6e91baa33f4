package plan

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/headroom-ml/headroom/checkpoint"
)

// TestActivationBudgetMeetsAndMeasures: on the transformer at 60% and 40%
// of plain's activation peak, the planned peak is within the budget, and
// the step measured on cpu with the modes chosen on meta holds the same
// bytes as predicted, tag by tag.
func TestActivationBudgetMeetsAndMeasures(t *testing.T) {
	small := Config{Model: "transformer", Batch: 4, Seq: 16}
	plain, err := Predict(small)
	if err != nil {
		t.Fatal(err)
	}
	for _, frac := range []float64{0.6, 0.4} {
		c := small
		c.ActivationBudget = int64(frac * float64(plain.Ranks[0].Activation))
		pred, err := Predict(c)
		if err != nil {
			t.Fatalf("%.0f%%: %v", 100*frac, err)
		}
		got := pred.Ranks[0].Activation
		t.Logf("budget %d B (%.0f%% of %d B): planned %d B, modes %v", c.ActivationBudget, 100*frac, plain.Ranks[0].Activation, got, checkpoint.Modes(pred.ActivationBudget.Decisions))
		if got > c.ActivationBudget || pred.ActivationBudget.Peak != got {
			t.Errorf("budget %d B: activation peak %d B (solver %d B)", c.ActivationBudget, got, pred.ActivationBudget.Peak)
		}
		meas, err := Measure(c)
		if err != nil {
			t.Fatal(err)
		}
		if meas.Ranks[0].PeakBytes != pred.Ranks[0].PeakBytes || meas.Ranks[0].AllocatedPeak != pred.Ranks[0].AllocatedPeak {
			t.Errorf("budget %d B: measured %+v, predicted %+v", c.ActivationBudget, meas.Ranks[0].PeakBytes, pred.Ranks[0].PeakBytes)
		}
	}
}

// TestActivationBudgetErrors: a budget too small names the smallest that
// works, and that one plans; with --selective it is refused.
func TestActivationBudgetErrors(t *testing.T) {
	c := Config{Model: "transformer", Batch: 4, Seq: 16, ActivationBudget: 1024}
	_, err := Predict(c)
	var be *checkpoint.BudgetError
	if !errors.As(err, &be) || be.Smallest <= 1024 {
		t.Fatalf("err %v; want a *checkpoint.BudgetError naming the smallest budget", err)
	}
	t.Log(err)
	c.ActivationBudget = be.Smallest
	if p, err := Predict(c); err != nil || p.Ranks[0].Activation > be.Smallest {
		t.Fatalf("the smallest budget %d B: %v", be.Smallest, err)
	}
	c.Selective = true
	if _, err := Predict(c); err == nil || !strings.Contains(err.Error(), "activation budget") {
		t.Fatalf("with selective: err %v", err)
	}
}

// TestActivationBudgetUnderCapacity: a capacity plain does not fit in
// does not change the solver's choice (each choice is planned without it;
// a step that ran out of memory midway would report a truncated peak),
// and the chosen step fits.
func TestActivationBudgetUnderCapacity(t *testing.T) {
	small := Config{Model: "transformer", Batch: 32}
	plain, err := Predict(small)
	if err != nil {
		t.Fatal(err)
	}
	r := plain.Ranks[0]
	c := small
	c.ActivationBudget = r.Activation / 2
	free, err := Predict(c)
	if err != nil {
		t.Fatal(err)
	}
	c.Capacity = free.Ranks[0].AllocatedPeak // the chosen step's, which plain's exceeds
	plainUnder := small
	plainUnder.Capacity = c.Capacity
	if under, err := Predict(plainUnder); err != nil || under.OOM == nil {
		t.Fatalf("plain under %d B: %v, OOM %v; want out of memory", c.Capacity, err, under.OOM)
	}
	got, err := Predict(c)
	if err != nil {
		t.Fatal(err)
	}
	want, have := checkpoint.Modes(free.ActivationBudget.Decisions), checkpoint.Modes(got.ActivationBudget.Decisions)
	if got.OOM != nil || got.ActivationBudget.Peak != free.ActivationBudget.Peak || !slices.Equal(want, have) {
		t.Errorf("under capacity %d B: modes %v, peak %d B, OOM %v; without it %v, %d B", c.Capacity, have, got.ActivationBudget.Peak, got.OOM, want, free.ActivationBudget.Peak)
	}
}
