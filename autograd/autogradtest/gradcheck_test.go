package autogradtest_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/headroom-ml/headroom/autograd"
	"github.com/headroom-ml/headroom/autograd/autogradtest"
	"github.com/headroom-ml/headroom/device"
	"github.com/headroom-ml/headroom/device/cpu"
)

// recordTB is a TB that records what Check reports instead of failing.
type recordTB struct{ errs []string }

func (*recordTB) Helper()                        {}
func (*recordTB) Logf(string, ...any)            {}
func (r *recordTB) Errorf(f string, args ...any) { r.errs = append(r.errs, fmt.Sprintf(f, args...)) }

// TestCheckRejectsNonFiniteGradients: a numeric gradient that is NaN (log
// of negative inputs, whose analytic gradient 1/x is finite), and an
// analytic one that is NaN or infinite, each fail the check — a comparison
// d > tol is false for NaN and would pass them.
func TestCheckRejectsNonFiniteGradients(t *testing.T) {
	dev := cpu.New(0, device.Options{})
	defer dev.Close()
	rng := rand.New(rand.NewPCG(5, 5))
	for _, c := range []struct {
		name   string
		lo, hi float64
		f      func(x *autograd.Tensor) *autograd.Tensor
		want   string // in the reported error
	}{
		{"numeric NaN", -2, -1, (*autograd.Tensor).Log, "numeric NaN"},
		{"analytic NaN", 1, 2, badGradient(math.NaN()), "analytic NaN"},
		{"analytic Inf", 1, 2, badGradient(math.Inf(1)), "Inf, numeric"},
		{"finite", 1, 2, (*autograd.Tensor).Log, ""},
	} {
		x := autogradtest.Rand(dev, rng, c.lo, c.hi, 3)
		var tb recordTB
		ok := autogradtest.Check(&tb, autogradtest.Options{}, func(_ *autograd.Scope, in []*autograd.Tensor) *autograd.Tensor { return c.f(in[0]) }, x)
		x.Release()
		switch {
		case c.want == "" && (!ok || len(tb.errs) != 0):
			t.Errorf("%s: check failed: %v", c.name, tb.errs)
		case c.want != "" && (ok || len(tb.errs) != 1 || !strings.Contains(tb.errs[0], c.want)):
			t.Errorf("%s: Check = %v reporting %q, want false and one error containing %q", c.name, ok, tb.errs, c.want)
		}
	}
	if n := dev.LiveBlocks(); n != 0 {
		t.Errorf("%d blocks live: %v", n, dev.Live())
	}
}

// badGradient returns the identity with a backward that multiplies the
// gradient by c (a NaN or an infinity).
func badGradient(c float64) func(x *autograd.Tensor) *autograd.Tensor {
	return func(x *autograd.Tensor) *autograd.Tensor {
		var y *autograd.Tensor
		x.Scope().NoGrad(func() { y = x.Scale(1) })
		autograd.Record(autograd.Custom{
			Name: "bad_gradient", Outs: []*autograd.Tensor{y}, Ins: []*autograd.Tensor{x},
			Backward: func(grads, _ []*autograd.Tensor, _ []bool) []*autograd.Tensor {
				return []*autograd.Tensor{grads[0].Scale(c)}
			},
		})
		return y
	}
}

// TestMaxDiff: the largest absolute difference, +Inf for a NaN or for
// slices of different lengths.
func TestMaxDiff(t *testing.T) {
	for _, c := range []struct {
		a, b []float64
		want float64
	}{
		{[]float64{1, 2, 3}, []float64{1, 2.5, 2}, 1},
		{[]float64{}, []float64{}, 0},
		{[]float64{1, math.NaN()}, []float64{1, 2}, math.Inf(1)},
		{[]float64{1}, []float64{1, 2}, math.Inf(1)},
	} {
		if got := autogradtest.MaxDiff(c.a, c.b); got != c.want {
			t.Errorf("MaxDiff(%v, %v) = %v, want %v", c.a, c.b, got, c.want)
		}
	}
	if got := autogradtest.MaxAbs([]float64{-3, 2}); got != 3 {
		t.Errorf("MaxAbs = %v, want 3", got)
	}
	if got := autogradtest.MaxAbs([]float64{1, math.NaN()}); !math.IsInf(got, 1) {
		t.Errorf("MaxAbs with a NaN = %v, want +Inf", got)
	}
}
