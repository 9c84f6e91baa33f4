package plan

import (
	"testing"
)

// TestZero3PlanIncludesConstruction plans ZeRO-3 over 8 ranks of a model
// whose step needs less than the whole model's bytes per rank, and checks
// that the prediction includes building the model (each rank writes only
// its shard) by planning again with a capacity of exactly the predicted
// allocated peak — below the whole model's parameter bytes, so a rank that
// built the whole model could not — which must fit with the same peaks,
// while one byte less must not, and the out-of-memory plan still counts
// the model's parameters.
func TestZero3PlanIncludesConstruction(t *testing.T) {
	c := Config{Model: "transformer", Batch: 8, Seq: 8, Ranks: 8, Zero: 3, Optimizer: "sgd"}
	free, err := Predict(c)
	if err != nil {
		t.Fatal(err)
	}
	need, whole := free.Ranks[0].AllocatedPeak, 4*free.Params // F32 parameters
	if need >= whole {
		t.Fatalf("the step needs %d B per rank, not less than the whole model's %d B: the test needs a smaller step", need, whole)
	}
	c.Capacity = need
	fits, err := Predict(c)
	switch {
	case err != nil:
		t.Fatal(err)
	case fits.OOM != nil:
		t.Fatalf("capacity %d B (the predicted peak, whole model %d B): %v", need, whole, fits.OOM)
	}
	for i := range free.Ranks {
		if a, b := free.Ranks[i].PeakBytes, fits.Ranks[i].PeakBytes; a != b {
			t.Errorf("rank %d: %+v without a capacity, %+v with %d B", i, a, b, need)
		}
	}
	c.Capacity = need - 1
	short, err := Predict(c)
	switch {
	case err != nil:
		t.Fatal(err)
	case short.OOM == nil:
		t.Errorf("capacity %d B, one less than the predicted peak: fits", need-1)
	case short.Params != free.Params:
		t.Errorf("out of memory: %d parameters reported, want %d", short.Params, free.Params)
	}
	t.Logf("whole model %d B, rank peak %d B (capacity fits exactly)", whole, need)
}
