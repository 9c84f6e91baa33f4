package autogradtest

import (
	"math"
	"math/rand/v2"

	"github.com/headroom-ml/headroom/autograd"
	"github.com/headroom-ml/headroom/device"
)

// Options are gradcheck's tolerances; the zero value is PyTorch's gradcheck
// defaults (Eps 1e-6, Atol 1e-5, Rtol 1e-3).
type Options struct {
	Eps, Atol, Rtol float64
	// Seed seeds the random projection of the output.
	Seed uint64
}

// TB is the part of testing.TB that Check uses.
type TB interface {
	Helper()
	Errorf(format string, args ...any)
	Logf(format string, args ...any)
}

// Check compares the analytic gradient of f at inputs (F64 leaves that
// require grad, on a computing device) with central differences. f runs in
// a fresh scope, receives the inputs attached to it (Scope.Use) and returns
// any tensor y; the checked scalar is Σ y·r for a
// fixed random r of y's shape. Check restores the inputs' values and leaves
// their gradients zeroed.
func Check(t TB, o Options, f func(s *autograd.Scope, in []*autograd.Tensor) *autograd.Tensor, in ...*autograd.Tensor) bool {
	t.Helper()
	if o.Eps == 0 {
		o.Eps = 1e-6
	}
	if o.Atol == 0 {
		o.Atol = 1e-5
	}
	if o.Rtol == 0 {
		o.Rtol = 1e-3
	}
	rng := rand.New(rand.NewPCG(o.Seed, 99))
	var r []float64
	var rshape []int
	// eval returns Σ y·r without recording a graph.
	eval := func() float64 {
		s := autograd.NewScope()
		defer s.Release()
		var v float64
		s.NoGrad(func() {
			y := f(s, use(s, in))
			ys := y.Float64s()
			if r == nil {
				rshape = y.Shape()
				r = make([]float64, len(ys))
				for i := range r {
					r[i] = rng.NormFloat64()
				}
			}
			for i := range ys {
				v += ys[i] * r[i]
			}
		})
		return v
	}
	eval()

	for _, x := range in {
		x.ZeroGrad()
	}
	s := autograd.NewScope()
	y := f(s, use(s, in))
	dev := y.Device()
	rt := s.FromFloat64s(dev, rshape, r)
	if err := y.BackwardWith(rt); err != nil {
		t.Errorf("gradcheck: backward: %v", err)
		s.Release()
		return false
	}
	s.Release()

	ok := true
	for xi, x := range in {
		var analytic []float64
		if g := x.Grad(); g != nil {
			analytic = g.Float64s()
		} else {
			analytic = make([]float64, x.Len())
		}
		vals := x.Float64s()
		for i := range vals {
			orig := vals[i]
			vals[i] = orig + o.Eps
			x.SetFloat64s(vals)
			fp := eval()
			vals[i] = orig - o.Eps
			x.SetFloat64s(vals)
			fm := eval()
			vals[i] = orig
			x.SetFloat64s(vals)
			num := (fp - fm) / (2 * o.Eps)
			if d := math.Abs(num - analytic[i]); !agree(num, analytic[i], d, o) {
				if ok {
					t.Errorf("gradcheck: input %d %v element %d: analytic %.8g, numeric %.8g (diff %.3g)", xi, x.Shape(), i, analytic[i], num, d)
				}
				ok = false
			}
		}
		x.ZeroGrad()
	}
	return ok
}

// agree reports whether a numeric and an analytic gradient element agree
// (d = |num − analytic|): both finite and d ≤ Atol + Rtol·|num|. A NaN or
// an infinity on either side never agrees — the function is not
// differentiable there, or its gradient is wrong.
func agree(num, analytic, d float64, o Options) bool {
	finite := func(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }
	return finite(num) && finite(analytic) && d <= o.Atol+o.Rtol*math.Abs(num)
}

// Rand returns an F64 leaf of the given shape with values uniform in
// [lo, hi), requiring grad, on dev.
func Rand(dev *device.Device, rng *rand.Rand, lo, hi float64, shape ...int) *autograd.Tensor {
	n := 1
	for _, s := range shape {
		n *= s
	}
	v := make([]float64, n)
	for i := range v {
		v[i] = lo + (hi-lo)*rng.Float64()
	}
	t := autograd.FromFloat64s(dev, shape, v)
	t.SetRequiresGrad(true)
	return t
}

// Release releases tensors.
func Release(ts ...*autograd.Tensor) {
	for _, t := range ts {
		t.Release()
	}
}

// MaxDiff returns the largest absolute difference of two slices: +Inf
// when their lengths differ or a difference is NaN, so that a check
// d <= tol fails for them (d > tol with a NaN would pass).
func MaxDiff(a, b []float64) float64 {
	if len(a) != len(b) {
		return math.Inf(1)
	}
	m := 0.0
	for i := range a {
		d := math.Abs(a[i] - b[i])
		if math.IsNaN(d) {
			return math.Inf(1)
		}
		m = math.Max(m, d)
	}
	return m
}

func use(s *autograd.Scope, in []*autograd.Tensor) []*autograd.Tensor {
	out := make([]*autograd.Tensor, len(in))
	for i, t := range in {
		out[i] = s.Use(t)
	}
	return out
}

// MaxAbs returns the largest absolute value in v (+Inf when v holds a NaN).
func MaxAbs(v []float64) float64 {
	m := 0.0
	for _, x := range v {
		if math.IsNaN(x) {
			return math.Inf(1)
		}
		m = math.Max(m, math.Abs(x))
	}
	return m
}
