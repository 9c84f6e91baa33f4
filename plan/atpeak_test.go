package plan

import "testing"

// TestAtPeak: what each tag held at the peak adds up to the peak, and the
// prediction's equals the measurement's.
func TestAtPeak(t *testing.T) {
	for _, c := range []Config{{Model: "transformer", Batch: 4, Seq: 16}, {Model: "small", Batch: 4, Checkpoint: -1}, {Model: "transformer", Batch: 4, Seq: 16, Ranks: 2, Zero: 2}} {
		pred, err := Predict(c)
		if err != nil {
			t.Fatal(err)
		}
		meas, err := Measure(c)
		if err != nil {
			t.Fatal(err)
		}
		for i, r := range pred.Ranks {
			a := r.AtPeak
			if sum := a.Parameter + a.Gradient + a.Optimizer + a.Activation + a.Workspace + a.Communication + a.Other; sum != r.Total || a.Total != r.Total {
				t.Errorf("%+v rank %d: tags at the peak add up to %d (total %d), want the peak %d", c, i, sum, a.Total, r.Total)
			}
			if a != meas.Ranks[i].AtPeak {
				t.Errorf("%+v rank %d: predicted at the peak %+v, measured %+v", c, i, a, meas.Ranks[i].AtPeak)
			}
		}
		t.Logf("%s: at the peak %+v", c.Model, pred.Ranks[0].AtPeak)
	}
}
