package parallel_test

import (
	"fmt"
	"math"
	"testing"

	"github.com/headroom-ml/headroom/device"
	"github.com/headroom-ml/headroom/dtype"
)

// TestDeferredBuildShards builds an MLP with nn.NewDeferredBuilder on every
// rank and hands the builder to NewDDP, for several rank counts, stages and
// dtypes, with buckets small enough that pieces cut parameters apart, and
// checks that
//
//   - every rank's parameters after construction (its shard, gathered
//     with every other rank's by Unshard) equal an unsharded build of the
//     same seed bit for bit;
//   - under stage 3 the rank's device held nothing but its shard while it
//     was built: parameter peak g·S, total peak g·S (shard) + g·S (gradient
//     shard) + 8·N (AllSum's words), S = ShardLen — no whole model, no
//     bucket;
//   - training three steps gives exactly the losses and parameters of the
//     same run built eagerly (rank 0's parameters broadcast and sharded).
func TestDeferredBuildShards(t *testing.T) {
	widths := []int{5, 7, 6, 3}
	ref := run(t, setup{dt: dtype.F32, widths: widths, batch: 12, steps: 1, initial: true})[0].init
	for _, dt := range []dtype.DType{dtype.F32, dtype.BF16} {
		want := ref
		if dt == dtype.BF16 {
			want = run(t, setup{dt: dt, widths: widths, batch: 12, steps: 1, initial: true})[0].init
		}
		for _, zero := range []int{1, 3} {
			for _, n := range []int{1, 2, 3, 4} {
				s := setup{ranks: n, zero: zero, dt: dt, widths: widths, batch: 12, steps: 3, bucket: 40, initial: true}
				eager := run(t, s)
				s.lazy = true
				lazy := run(t, s)
				name := fmt.Sprintf("%s, stage %d, %d ranks", dt, zero, n)
				g := int64(dt.Size())
				for r := range lazy {
					where := fmt.Sprintf("%s, rank %d", name, r)
					sameBits(t, where+": initial parameters vs an unsharded build", lazy[r].init, want)
					sameBits(t, where+": losses vs the eager build", lazy[r].losses, eager[r].losses)
					sameBits(t, where+": trained parameters vs the eager build", lazy[r].params, eager[r].params)
					if zero < 3 {
						continue
					}
					shard := g * int64(lazy[r].shard)
					b := lazy[r].built
					if got := b.ByTag[device.Parameter].Peak; got != shard {
						t.Errorf("%s: parameter peak while built %d B, want the shard's %d B", where, got, shard)
					}
					if got, w := b.Requested.Peak, 2*shard+8*int64(n); got != w {
						t.Errorf("%s: peak while built %d B, want shard + gradient shard + 8·N = %d B", where, got, w)
					}
				}
			}
		}
	}
}

// sameBits fails t unless got and want are equal bit for bit.
func sameBits(t *testing.T, what string, got, want []float64) {
	t.Helper()
	if len(got) != len(want) {
		t.Errorf("%s: %d values, want %d", what, len(got), len(want))
		return
	}
	for i := range got {
		if math.Float64bits(got[i]) != math.Float64bits(want[i]) {
			t.Errorf("%s: value %d is %v, want %v", what, i, got[i], want[i])
			return
		}
	}
}
