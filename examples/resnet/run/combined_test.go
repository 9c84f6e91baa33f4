package run_test

import (
	"io"
	"math"
	"testing"

	"github.com/headroom-ml/headroom/examples/resnet/run"
)

// TestCombinedTechniquesTrainLikePlain trains the MNIST ResNet briefly in
// F32 and with bf16 autocast, checkpointing and 4-way accumulation
// together: the test accuracies must agree within 3 points (the same
// batches in the same order; the techniques change rounding, not the
// algorithm; after 120 steps the runs are still learning fast, so a
// rounding difference moves accuracy by about a point).
func TestCombinedTechniquesTrainLikePlain(t *testing.T) {
	if testing.Short() {
		t.Skip("trains two models for a few hundred steps")
	}
	accuracy := func(extra ...string) float64 {
		c, err := run.Parse(append([]string{"--steps", "120", "--batch", "64", "--eval-samples", "1000", "--lr", "0.05"}, extra...), io.Discard)
		if err != nil {
			t.Fatal(err)
		}
		r, err := run.Train(c, io.Discard)
		if err != nil {
			t.Fatal(err)
		}
		return r.Eval
	}
	plain := accuracy()
	combined := accuracy("--amp", "bf16", "--checkpoint", "--accum", "4")
	t.Logf("test accuracy after 120 steps: plain %.1f%%, bf16 autocast + checkpoint + accumulate 4 %.1f%%", 100*plain, 100*combined)
	if plain < 0.8 {
		t.Errorf("plain run reached only %.1f%%: too few steps to compare", 100*plain)
	}
	if math.Abs(plain-combined) > 0.03 {
		t.Errorf("accuracy %.1f%% combined, %.1f%% plain: want within 3 points", 100*combined, 100*plain)
	}
}
