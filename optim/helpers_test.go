package optim_test

import (
	"math"
	"testing"

	"github.com/headroom-ml/headroom/autograd"
	"github.com/headroom-ml/headroom/device"
	"github.com/headroom-ml/headroom/dtype"
	"github.com/headroom-ml/headroom/nn"
)

// param makes a named parameter of dtype dt holding vals.
func param(dev *device.Device, dt dtype.DType, name string, vals ...float64) *autograd.Tensor {
	p := autograd.Param(dev, dt, name, len(vals))
	p.SetFloat64s(vals)
	return p
}

// setGrad gives p the gradient g (rounded to p's dtype) by running
// backward through Σ p·g.
func setGrad(t testing.TB, p *autograd.Tensor, g []float64) {
	t.Helper()
	p.ZeroGrad()
	s := autograd.NewScope()
	defer s.Release()
	c := s.FromFloat64s(p.Device(), p.Shape(), g)
	if p.DType() != dtype.F64 {
		c = c.Cast(p.DType())
	}
	if err := s.Use(p).Mul(c).Sum(false).Backward(); err != nil {
		t.Fatal(err)
	}
}

// round rounds values to dt, as the optimizer sees them.
func round(dt dtype.DType, v []float64) []float64 {
	out := make([]float64, len(v))
	for i, x := range v {
		if dt == dtype.F32 {
			x = float64(float32(x))
		}
		out[i] = x
	}
	return out
}

func params(ts ...*autograd.Tensor) []nn.Param {
	ps := make([]nn.Param, len(ts))
	for i, t := range ts {
		ps[i] = nn.Param{Name: t.Name(), T: t}
	}
	return ps
}

// tol is the relative tolerance of a dtype's results against float64.
func tol(dt dtype.DType) float64 {
	if dt == dtype.F64 {
		return 1e-12
	}
	return 1e-6
}

// near checks got against want elementwise within rel·max(|want|, 1).
func near(t *testing.T, what string, got, want []float64, rel float64) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d values, want %d", what, len(got), len(want))
	}
	for i := range want {
		if d := math.Abs(got[i] - want[i]); !(d <= rel*math.Max(math.Abs(want[i]), 1)) {
			t.Errorf("%s[%d] = %.17g, want %.17g (diff %.3g)", what, i, got[i], want[i], d)
		}
	}
}

// same checks two float64 slices for bit equality.
func same(t *testing.T, what string, got, want []float64) {
	t.Helper()
	for i := range want {
		if math.Float64bits(got[i]) != math.Float64bits(want[i]) {
			t.Errorf("%s[%d] = %v, want %v bit for bit", what, i, got[i], want[i])
		}
	}
}

// fillCache caps dev at the memory it has reserved and takes every free
// cached byte with blocks tagged Other, so that the next allocation fails;
// room bytes are left free first (a block of that size still fits). It
// returns the function that frees the blocks and lifts the cap.
func fillCache(t *testing.T, dev *device.Device, room int64) func() {
	t.Helper()
	dev.EmptyCache()
	dev.SetCapacity(dev.Stats().Reserved.Current)
	var blocks []*device.Block
	var kept *device.Block
	if room > 0 {
		b, err := dev.Alloc(room, device.Label{Tag: device.Other, Op: "room"})
		if err != nil {
			t.Fatalf("no room for %d bytes: %v", room, err)
		}
		kept = b
	}
	for {
		n := min(dev.Stats().LargestFree, 1<<20)
		if n == 0 {
			break
		}
		b, err := dev.Alloc(n, device.Label{Tag: device.Other, Op: "hog"})
		if err != nil {
			t.Fatalf("filling the cache: %v", err)
		}
		blocks = append(blocks, b)
	}
	if kept != nil {
		kept.Release()
	}
	return func() {
		for _, b := range blocks {
			b.Release()
		}
		dev.SetCapacity(0)
	}
}
