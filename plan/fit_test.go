package plan

import (
	"testing"
)

// TestFitAgreesWithMeasurement: the predicted largest batch under a
// capacity equals the one found by running on cpu devices, and one batch
// more runs out of memory for real.
func TestFitAgreesWithMeasurement(t *testing.T) {
	c := Config{Model: "transformer", Seq: 8}
	const capacity = 16 << 20
	pred, err := Fit(c, capacity, 64)
	if err != nil {
		t.Fatal(err)
	}
	t.Log("\n" + pred.String())
	// Running every technique for real takes a while; three suffice.
	some := []Technique{Techniques[0], Techniques[2], Techniques[5]}
	meas, err := FitMeasured(c, capacity, 64, some)
	if err != nil {
		t.Fatal(err)
	}
	for i, j := range []int{0, 2, 5} {
		if pred.Options[j] != meas.Options[i] {
			t.Errorf("%s: predicted %+v, measured %+v", pred.Options[j].Technique, pred.Options[j], meas.Options[i])
		}
	}
	// The plain answer runs; one more sample does not.
	b := pred.Options[0].MaxBatch
	for _, tc := range []struct {
		batch int
		fits  bool
	}{{b, true}, {b + 1, false}} {
		cc := c
		cc.Batch, cc.Capacity, cc.onCPU = tc.batch, capacity, true
		p, err := Predict(cc)
		if err != nil {
			t.Fatal(err)
		}
		if (p.OOM == nil) != tc.fits {
			t.Errorf("batch %d on cpu in %d bytes: out of memory %v, want fits=%v", tc.batch, capacity, p.OOM != nil, tc.fits)
		}
	}
	if pred.Best == nil {
		t.Errorf("no technique reaches batch 64 in %d bytes", capacity)
	}
}
