package amp

import (
	"fmt"
	"math"

	"github.com/headroom-ml/headroom/autograd"
	"github.com/headroom-ml/headroom/dtype"
	"github.com/headroom-ml/headroom/optim"
)

// ScalerConfig configures a Scaler; the zero value is PyTorch's defaults.
type ScalerConfig struct {
	// InitScale is the first scale; default 2^16.
	InitScale float64
	// GrowthFactor multiplies the scale after GrowthInterval steps in a row
	// without overflow; default 2.
	GrowthFactor float64
	// BackoffFactor multiplies the scale after a step with an overflow;
	// default 0.5.
	BackoffFactor float64
	// GrowthInterval is the number of clean steps before growing; default
	// 2000.
	GrowthInterval int
	// Disabled turns the Scaler into a no-op.
	Disabled bool
}

// stage is where an optimizer is in the Scaler's state machine.
type stage int

const (
	ready    stage = iota // no unscale or step since the last Update
	unscaled              // Unscale ran
	stepped               // Step ran
)

var stageNames = [...]string{"ready", "unscaled", "stepped"}

type optState struct {
	stage    stage
	foundInf bool
	overflow string // the first parameter whose gradient was not finite
}

// Scaler is dynamic loss scaling (torch.amp.GradScaler). For each
// optimizer it follows READY → UNSCALED (Unscale) → STEPPED (Step) and
// back to READY at Update; calls out of that order are errors. Not safe for
// concurrent use.
type Scaler struct {
	cfg      ScalerConfig
	enabled  bool
	note     string
	scale    float64
	tracker  int // clean steps since the last growth or backoff
	opts     map[optim.Optimizer]*optState
	overflow string
	skipped  int
}

// NewScaler returns a Scaler for gradients computed in dt. For F16 it
// scales (unless c.Disabled); for BF16, F32 and F64 it is disabled and Note
// says why.
func NewScaler(dt dtype.DType, c ScalerConfig) *Scaler {
	if c.InitScale == 0 {
		c.InitScale = 1 << 16
	}
	if c.GrowthFactor == 0 {
		c.GrowthFactor = 2
	}
	if c.BackoffFactor == 0 {
		c.BackoffFactor = 0.5
	}
	if c.GrowthInterval == 0 {
		c.GrowthInterval = 2000
	}
	s := &Scaler{cfg: c, scale: c.InitScale, opts: map[optim.Optimizer]*optState{}}
	switch {
	case c.Disabled:
		s.note = "loss scaling disabled"
	case dt == dtype.BF16:
		s.note = "bf16 has fp32's exponent range: gradients do not underflow, so loss scaling is not needed and the scaler is a no-op"
	case dt != dtype.F16:
		s.note = fmt.Sprintf("%s gradients need no loss scaling: the scaler is a no-op", dt)
	default:
		s.enabled = true
		s.note = fmt.Sprintf("f16 loss scaling: scale %g, ×%g after %d clean steps, ×%g on overflow", c.InitScale, c.GrowthFactor, c.GrowthInterval, c.BackoffFactor)
	}
	if s.enabled && !(c.InitScale > 0 && c.GrowthFactor > 1 && c.BackoffFactor > 0 && c.BackoffFactor < 1 && c.GrowthInterval > 0) {
		panic(fmt.Sprintf("amp.NewScaler: init scale %g, growth %g, backoff %g, interval %d: want scale > 0, growth > 1, 0 < backoff < 1, interval > 0",
			c.InitScale, c.GrowthFactor, c.BackoffFactor, c.GrowthInterval))
	}
	return s
}

// Enabled reports whether the Scaler scales.
func (s *Scaler) Enabled() bool { return s.enabled }

// Note says what the Scaler does, or why it does nothing.
func (s *Scaler) Note() string { return s.note }

// Scale returns the current scale (1 when disabled).
func (s *Scaler) Scale() float64 {
	if !s.enabled {
		return 1
	}
	return s.scale
}

// Skipped returns how many steps were skipped for overflow.
func (s *Scaler) Skipped() int { return s.skipped }

// LastOverflow names the parameter whose gradient overflowed in the last
// skipped step ("" if none).
func (s *Scaler) LastOverflow() string { return s.overflow }

// ScaleLoss returns loss·scale, the tensor to call Backward on; when
// disabled it returns loss itself.
func (s *Scaler) ScaleLoss(loss *autograd.Tensor) *autograd.Tensor {
	if !s.enabled {
		return loss
	}
	return loss.Scale(s.scale)
}

func (s *Scaler) state(o optim.Optimizer) *optState {
	st := s.opts[o]
	if st == nil {
		st = &optState{}
		s.opts[o] = st
	}
	return st
}

// Unscale divides the gradients of o's parameters by the scale, in place,
// and records whether any is infinite or NaN. Call it before clipping
// gradients; Step calls it if it has not run. For an optim.Sharded
// optimizer (ZeRO) the finding is shared with every rank through AllSum,
// so that all of them skip the step together.
func (s *Scaler) Unscale(o optim.Optimizer) error {
	if !s.enabled {
		return nil
	}
	st := s.state(o)
	switch st.stage {
	case unscaled:
		return fmt.Errorf("amp: Unscale has already been called on this optimizer since the last Update")
	case stepped:
		return fmt.Errorf("amp: Unscale called after Step: call Update first")
	}
	if err := s.unscale(o, st); err != nil {
		return fmt.Errorf("amp: unscale: %w", err)
	}
	if sh, ok := o.(optim.Sharded); ok {
		// Each rank sees its part of the gradients: skip the step on every
		// rank when any rank found an overflow.
		local := 0.0
		if st.foundInf {
			local = 1
		}
		n, err := sh.AllSum(local)
		if err != nil {
			return fmt.Errorf("amp: unscale: %w", err)
		}
		if n > 0 && !st.foundInf {
			st.foundInf, st.overflow = true, "(a parameter of another rank)"
		}
	}
	st.stage = unscaled
	return nil
}

// unscale divides the gradients of o's parameters by the scale and records
// in st the first parameter whose gradient is not finite. The check is
// optim.SumSquares: one host read per device, whatever the number of
// gradients (a non-contiguous gradient, which backward never makes, costs
// a read of its own).
func (s *Scaler) unscale(o optim.Optimizer, st *optState) error {
	inv := 1 / s.scale
	var names []string
	var grads, dense, strided []*autograd.Tensor
	for _, p := range o.Params() {
		if g := p.T.Grad(); g != nil {
			names, grads = append(names, p.Name), append(grads, g)
			if g.IsContiguous() {
				dense = append(dense, g)
			} else {
				strided = append(strided, g)
			}
		}
	}
	sums, err := optim.SumSquares("amp_unscale", dense, inv)
	if err != nil {
		return err
	}
	extra := make([]float64, len(strided))
	if err := autograd.Try(func() {
		for i, g := range strided {
			g.ScaleInPlace(inv)
			extra[i] = g.SumSquares()
		}
	}); err != nil {
		return err
	}
	for i, g := range grads {
		var ss float64
		if g.IsContiguous() {
			ss, sums = sums[0], sums[1:]
		} else {
			ss, extra = extra[0], extra[1:]
		}
		if math.IsInf(ss, 0) || math.IsNaN(ss) {
			if !st.foundInf {
				st.overflow = names[i]
			}
			st.foundInf = true
		}
	}
	return nil
}

// Step unscales o's gradients if Unscale has not, then runs o.Step unless a
// gradient is infinite or NaN: the step is skipped, leaving parameters and
// optimizer state untouched, and LastOverflow names the parameter. It
// reports whether the step ran.
func (s *Scaler) Step(o optim.Optimizer) (bool, error) {
	if !s.enabled {
		return true, o.Step()
	}
	st := s.state(o)
	if st.stage == stepped {
		return false, fmt.Errorf("amp: Step has already been called on this optimizer since the last Update")
	}
	if st.stage == ready {
		if err := s.Unscale(o); err != nil {
			return false, err
		}
	}
	st.stage = stepped
	if st.foundInf {
		s.skipped++
		s.overflow = st.overflow
		return false, nil
	}
	return true, o.Step()
}

// Update adapts the scale after the steps of this iteration: ×BackoffFactor
// if any optimizer's gradients overflowed, ×GrowthFactor after
// GrowthInterval clean iterations in a row. Every optimizer returns to
// READY.
func (s *Scaler) Update() error {
	if !s.enabled {
		return nil
	}
	if len(s.opts) == 0 {
		return fmt.Errorf("amp: Update without Unscale or Step since the last Update: no inf checks were recorded")
	}
	found := false
	for _, st := range s.opts {
		if st.stage == ready {
			continue
		}
		found = found || st.foundInf
	}
	if found {
		s.scale *= s.cfg.BackoffFactor
		s.tracker = 0
	} else if s.tracker++; s.tracker == s.cfg.GrowthInterval {
		s.scale *= s.cfg.GrowthFactor
		s.tracker = 0
	}
	clear(s.opts)
	return nil
}

// Mark returns the function that puts the Scaler back as it is now: its
// scale, growth tracker, skipped count and last overflow, with no Unscale
// or Step recorded since. A caller that abandons an iteration half way —
// train.Stepper when a step fails — restores it, so that the retried
// iteration scales exactly as the first try did. Call it between Update
// and the next Unscale or Step.
func (s *Scaler) Mark() (restore func()) {
	scale, tracker, skipped, overflow := s.scale, s.tracker, s.skipped, s.overflow
	return func() {
		s.scale, s.tracker, s.skipped, s.overflow = scale, tracker, skipped, overflow
		clear(s.opts)
	}
}

// ScalerState is what a resumed run needs to continue scaling exactly.
type ScalerState struct {
	Scale         float64 `json:"scale"`
	GrowthTracker int     `json:"growth_tracker"`
	Skipped       int     `json:"skipped"`
}

// State returns the Scaler's state.
func (s *Scaler) State() ScalerState {
	return ScalerState{Scale: s.scale, GrowthTracker: s.tracker, Skipped: s.skipped}
}

// Load restores a saved state. It fails, changing nothing, between
// Unscale/Step and Update.
func (s *Scaler) Load(st ScalerState) error {
	if len(s.opts) > 0 {
		return fmt.Errorf("amp: Load between Step and Update")
	}
	if !(st.Scale > 0) || math.IsInf(st.Scale, 0) || st.GrowthTracker < 0 || st.Skipped < 0 {
		return fmt.Errorf("amp: Load: scale %v, growth tracker %d, skipped %d: want a finite scale > 0 and counts ≥ 0", st.Scale, st.GrowthTracker, st.Skipped)
	}
	s.scale, s.tracker, s.skipped = st.Scale, st.GrowthTracker, st.Skipped
	return nil
}
