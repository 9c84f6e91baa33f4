package optim

import (
	"fmt"
	"math"
)

// Schedule gives the learning rate of each step. Steps are counted from 0:
// LR(0) is the rate of the first optimizer Step, LR(n) the rate after n
// completed Steps. A training loop sets it before each Step:
//
//	for step := 0; step < total; step++ {
//		opt.SetLR(sched.LR(step))
//		… forward, backward …
//		if err := opt.Step(); err != nil { … }
//	}
type Schedule interface {
	LR(step int) float64
}

// StepLR decays the rate by Gamma every StepSize steps (PyTorch's StepLR):
// LR(n) = Base·Gamma^⌊n/StepSize⌋.
type StepLR struct {
	// Base is the rate of steps 0 … StepSize−1.
	Base float64
	// StepSize is the number of steps between decays, > 0 (required).
	StepSize int
	// Gamma is the factor of each decay; 0 means PyTorch's default 0.1.
	Gamma float64
}

// LR returns Base·Gamma^⌊step/StepSize⌋. It panics when StepSize ≤ 0 or
// step < 0.
func (s StepLR) LR(step int) float64 {
	if s.StepSize <= 0 {
		panic(fmt.Sprintf("optim: StepLR: StepSize %d, want > 0", s.StepSize))
	}
	checkStep("StepLR", step)
	g := s.Gamma
	if g == 0 {
		g = 0.1
	}
	return s.Base * math.Pow(g, float64(step/s.StepSize))
}

// CosineWarmup warms the rate up linearly and then decays it along a
// half cosine (the schedule of Hugging Face's
// get_cosine_schedule_with_warmup, with a floor Min):
//
//	n < Warmup:          LR(n) = Base·n/Warmup            (LR(0) = 0)
//	Warmup ≤ n < Total:  LR(n) = Min + (Base−Min)·(1 + cos(π·(n−Warmup)/(Total−Warmup)))/2
//	n ≥ Total:           LR(n) = Min
//
// so LR(Warmup) = Base and the rate reaches Min at Total.
type CosineWarmup struct {
	// Base is the peak rate, reached at step Warmup.
	Base float64
	// Min is the final rate; default 0.
	Min float64
	// Warmup is the number of warm-up steps, 0 ≤ Warmup ≤ Total; default 0
	// (start at Base).
	Warmup int
	// Total is the step at which the rate reaches Min, > 0 (required).
	Total int
}

// LR returns the rate of step n. It panics when Total ≤ 0, Warmup is
// outside [0, Total] or step < 0.
func (c CosineWarmup) LR(step int) float64 {
	if c.Total <= 0 || c.Warmup < 0 || c.Warmup > c.Total {
		panic(fmt.Sprintf("optim: CosineWarmup: Warmup %d and Total %d, want 0 ≤ Warmup ≤ Total and Total > 0", c.Warmup, c.Total))
	}
	checkStep("CosineWarmup", step)
	switch {
	case step < c.Warmup:
		return c.Base * float64(step) / float64(c.Warmup)
	case step >= c.Total:
		return c.Min
	}
	progress := float64(step-c.Warmup) / float64(c.Total-c.Warmup)
	return c.Min + (c.Base-c.Min)*(1+math.Cos(math.Pi*progress))/2
}

func checkStep(name string, step int) {
	if step < 0 {
		panic(fmt.Sprintf("optim: %s: step %d, want ≥ 0", name, step))
	}
}
