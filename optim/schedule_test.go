package optim_test

import (
	"math"
	"testing"

	"github.com/headroom-ml/headroom/optim"
)

func TestStepLR(t *testing.T) {
	for _, c := range []struct {
		s    optim.StepLR
		step int
		want float64
	}{
		{optim.StepLR{Base: 1, StepSize: 3}, 0, 1},
		{optim.StepLR{Base: 1, StepSize: 3}, 2, 1},
		{optim.StepLR{Base: 1, StepSize: 3}, 3, 0.1},
		{optim.StepLR{Base: 1, StepSize: 3}, 7, 0.01},
		{optim.StepLR{Base: 0.5, StepSize: 10, Gamma: 0.5}, 25, 0.125},
	} {
		if got := c.s.LR(c.step); math.Abs(got-c.want) > 1e-15 {
			t.Errorf("%+v.LR(%d) = %v, want %v", c.s, c.step, got, c.want)
		}
	}
}

func TestCosineWarmup(t *testing.T) {
	s := optim.CosineWarmup{Base: 1, Min: 0.1, Warmup: 10, Total: 110}
	for _, c := range []struct {
		step int
		want float64
	}{
		{0, 0}, {5, 0.5}, {9, 0.9}, // warm-up
		{10, 1},                            // the boundary: Base
		{35, 0.1 + 0.9*(1+math.Sqrt2/2)/2}, // a quarter of the cosine
		{60, 0.55},                         // half way
		{109, 0.1 + 0.9*(1+math.Cos(math.Pi*99/100))/2},
		{110, 0.1}, {1000, 0.1}, // Min from Total on
	} {
		if got := s.LR(c.step); math.Abs(got-c.want) > 1e-12 {
			t.Errorf("LR(%d) = %.15f, want %.15f", c.step, got, c.want)
		}
	}
	if got := (optim.CosineWarmup{Base: 2, Total: 4}).LR(0); got != 2 {
		t.Errorf("without warm-up LR(0) = %v, want Base 2", got)
	}
}

func TestScheduleMisuse(t *testing.T) {
	for name, f := range map[string]func(){
		"StepLR without StepSize":    func() { optim.StepLR{Base: 1}.LR(0) },
		"CosineWarmup without Total": func() { optim.CosineWarmup{Base: 1}.LR(0) },
		"Warmup > Total":             func() { optim.CosineWarmup{Base: 1, Warmup: 5, Total: 4}.LR(0) },
		"negative step":              func() { optim.CosineWarmup{Base: 1, Total: 4}.LR(-1) },
	} {
		func() {
			defer func() {
				if r := recover(); r == nil {
					t.Errorf("%s: no panic", name)
				} else {
					t.Logf("%s: %v", name, r)
				}
			}()
			f()
		}()
	}
	var _ optim.Schedule = optim.StepLR{}
	var _ optim.Schedule = optim.CosineWarmup{}
}
