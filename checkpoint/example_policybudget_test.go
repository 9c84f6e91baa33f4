package checkpoint_test

import (
	"fmt"

	"github.com/headroom-ml/headroom/checkpoint"
)

// ExampleModeBudget solves three layers whose step (here a stand-in for
// the real one) holds 300 B plainly; each layer frees 60 B selectively
// recomputed and 90 B recomputed or offloaded.
func ExampleModeBudget() {
	free := map[checkpoint.Mode]int64{checkpoint.SelectiveRecompute: 60, checkpoint.Recompute: 90, checkpoint.Offloaded: 90}
	mb := &checkpoint.ModeBudget{
		Bytes: 150,
		FLOPs: []int64{1e9, 1e9, 1e9},
		Rates: checkpoint.DefaultRates,
		Peak: func(ms []checkpoint.Mode) (int64, error) {
			p := int64(300)
			for _, m := range ms {
				p -= free[m]
			}
			return p, nil
		},
	}
	ds, peak, err := mb.Solve()
	fmt.Println(checkpoint.Modes(ds), peak, err)
	_, _, err = (&checkpoint.ModeBudget{Bytes: 10, FLOPs: mb.FLOPs, Rates: mb.Rates, Peak: mb.Peak}).Solve()
	fmt.Println(err)
	// Output:
	// [selective selective selective] 120 <nil>
	// activation budget 10 B: too small even with every layer at its most saving mode (recomputed or offloaded); the smallest budget that works with that choice is 30 B (planned)
}
