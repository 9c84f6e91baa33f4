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

// bf16Tolerance is how far, in closeTo's measure, BF16 parameters
// trained over several ranks may be from one rank's after steps steps of
// AdamW at learning rate lr (the tests' setup: 0.01). The parameters are
// BF16 roundings of F32 master weights. Splitting the batch only changes
// the order of the gradient's additions: each rank's partial sum and the
// reduction are rounded to BF16 (8 significant bits: unit roundoff
// u = 2^−8), so a gradient element differs by about 2u of the partial
// sums (the data keep clear of cancellation to zero, where a sign could
// flip). Adam's update lr·m̂/(√v̂+ε) is a ratio of the two moments, each
// carrying 2u, so it moves a master by at most lr·4u more or less per
// step; and two masters that close round to BF16 values at most one BF16
// ulp apart: 2^−7·|b| < 2^−7·(1+|b|). In all: 2^−7 + steps·lr·4u, 0.0083
// for 3 steps. One AdamW step moves every parameter by about lr (by
// exactly lr·sign(g) at the first), which is more than this wherever
// |b| < 0.2: a skipped step fails (TestBF16ToleranceCatchesASkippedStep).
func bf16Tolerance(steps int, lr float64) float64 {
	u := math.Ldexp(1, -8)
	return 2*u + float64(steps)*lr*4*u
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
	tol := map[dtype.DType]float64{dtype.F64: 1e-12, dtype.F32: 2e-6, dtype.BF16: bf16Tolerance(base.steps, 0.01)}
	worst := 0.0 // the largest BF16 difference seen
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
			i, d := closeTo(res.params, want, tol[c.dt])
			if c.dt == dtype.BF16 {
				worst = max(worst, d)
			}
			if i >= 0 {
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
	t.Logf("bf16: largest difference from one rank %.4g, tolerance %.4g", worst, tol[dtype.BF16])
}

// TestBF16ToleranceCatchesASkippedStep: the BF16 tolerance of the test
// above rejects a model that took one optimizer step fewer, or none, than
// the one-rank reference, whether it ran on one rank or two.
func TestBF16ToleranceCatchesASkippedStep(t *testing.T) {
	base := setup{widths: []int{6, 10, 7, 3}, batch: 8, steps: 3, dt: dtype.BF16}
	tol := bf16Tolerance(base.steps, 0.01)
	want := run(t, base)[0].params
	for _, steps := range []int{2, 0} {
		for _, ranks := range []int{0, 2} {
			c := base
			c.steps, c.ranks = steps, ranks
			i, d := closeTo(run(t, c)[0].params, want, tol)
			if i < 0 {
				t.Errorf("%d steps on %d ranks instead of %d: largest difference %.4g, within the tolerance %.4g", steps, ranks, base.steps, d, tol)
			}
			t.Logf("%d of %d steps on %d ranks: largest difference %.4g (tolerance %.4g)", steps, base.steps, ranks, d, tol)
		}
	}
}
