package parallel_test

import (
	"fmt"
	"math"
	"testing"

	"github.com/headroom-ml/headroom/dtype"
)

// closeTo compares parameter vectors: |a−b| ≤ tol·(1+|b|) everywhere.
func closeTo(a, b []float64, tol float64) (int, float64) {
	worst, at := 0.0, -1
	for i := range b {
		if d := math.Abs(a[i]-b[i]) / (1 + math.Abs(b[i])); d > worst || math.IsNaN(d) {
			worst, at = d, i
		}
	}
	if worst > tol {
		return at, worst
	}
	return -1, worst
}

// TestRanksTrainLikeOneRankOnTheWholeBatch trains an MLP for three steps
// on a global batch split over N ranks — plain data parallelism and ZeRO
// stages 1–3, with offload, gradient accumulation, clipping, several
// buckets, checkpointing — and compares every parameter with one device
// trained on the whole batch (without checkpointing): to 1e-12 in F64
// (only the order of additions differs), to F32 and BF16 rounding
// otherwise. Every rank must end with the same parameters.
func TestRanksTrainLikeOneRankOnTheWholeBatch(t *testing.T) {
	base := setup{widths: []int{6, 10, 7, 3}, batch: 8, steps: 3}
	tol := map[dtype.DType]float64{dtype.F64: 1e-12, dtype.F32: 2e-6, dtype.BF16: 3e-2}
	var cases []setup
	for _, dt := range []dtype.DType{dtype.F64, dtype.F32, dtype.BF16} {
		for _, n := range []int{1, 2, 4} {
			for zero := range 4 {
				c := base
				c.dt, c.ranks, c.zero = dt, n, zero
				cases = append(cases, c)
			}
		}
	}
	for _, extra := range []func(*setup){
		func(c *setup) { c.accum = 2 },
		func(c *setup) { c.clip = 0.05 },
		func(c *setup) { c.bucket = 100 }, // several buckets, a parameter larger than one
		func(c *setup) { c.offload = true },
		func(c *setup) { c.sgd = true },
		func(c *setup) { c.ckpt = true },
		func(c *setup) { c.accum, c.clip, c.bucket, c.ckpt = 2, 0.05, 100, true },
	} {
		for _, zero := range []int{0, 1, 2, 3} {
			for _, dt := range []dtype.DType{dtype.F64, dtype.BF16} {
				c := base
				c.dt, c.ranks, c.zero = dt, 2, zero
				extra(&c)
				if c.offload && zero == 0 {
					continue
				}
				cases = append(cases, c)
			}
		}
	}
	refs := map[string][]float64{}
	for _, c := range cases {
		ref := c
		ref.ranks, ref.zero, ref.offload, ref.bucket, ref.ckpt = 0, 0, false, 0, false
		key := fmt.Sprint(ref)
		if refs[key] == nil {
			refs[key] = run(t, ref)[0].params
		}
		want := refs[key]
		got := run(t, c)
		name := fmt.Sprintf("%s %d ranks zero %d offload %v accum %d clip %v bucket %d sgd %v checkpoint %v", c.dt, c.ranks, c.zero, c.offload, c.accum, c.clip, c.bucket, c.sgd, c.ckpt)
		for r, res := range got {
			if i, d := closeTo(res.params, want, tol[c.dt]); i >= 0 {
				t.Errorf("%s: rank %d parameter %d = %v, one rank %v (relative difference %.3g)", name, r, i, res.params[i], want[i], d)
			}
			if i, _ := closeTo(res.params, got[0].params, 0); i >= 0 {
				t.Errorf("%s: rank %d parameter %d = %v differs from rank 0's %v", name, r, i, res.params[i], got[0].params[i])
			}
		}
		if c.dt == dtype.F64 && c.ranks == 4 {
			_, d := closeTo(got[0].params, want, 1)
			t.Logf("%s: largest relative difference from one rank %.2g", name, d)
		}
	}
}
