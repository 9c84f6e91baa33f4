package train

import (
	"fmt"
	"math"

	"github.com/headroom-ml/headroom/amp"
	"github.com/headroom-ml/headroom/autograd"
	"github.com/headroom-ml/headroom/dtype"
	"github.com/headroom-ml/headroom/optim"
)

// Stepper runs optimizer steps with the memory techniques of a run:
// autocast, loss scaling, gradient accumulation, clipping and a learning
// rate schedule. It is the documented pattern of gradient accumulation in
// code:
//
//	for i := range k {                 // k micro-batches of the batch
//		loss := forward(micro i) / k   // in its own scope, under autocast
//		scaler.Scale(loss).Backward()  // gradients add up in the leaves
//	}
//	scaler.Unscale(opt)                // once, before clipping
//	ClipGradNorm(params, clip)
//	scaler.Step(opt)                   // skipped on overflow
//	scaler.Update()                    // only after the step
//	opt.ZeroGrad()
type Stepper struct {
	Opt optim.Optimizer
	// Scaler scales losses (nil: none).
	Scaler *amp.Scaler
	// Autocast is the forward's autocast dtype (Invalid: none).
	Autocast dtype.DType
	// Accum is the number of micro-batches per optimizer step (≤ 1: one).
	Accum int
	// Clip is the global gradient-norm limit (0: no clipping).
	Clip float64
	// Schedule sets the learning rate before each step (nil: constant).
	Schedule optim.Schedule
	// Sync, when set (data parallelism: a *parallel.DDP), runs the backward
	// passes of the first Accum−1 micro-batches inside Sync.NoSync, so that
	// their gradients are only accumulated and the last one's backward
	// reduces the sum across ranks.
	Sync interface{ NoSync(f func()) }

	steps int
}

// Steps returns the optimizer steps taken (skipped ones included).
func (st *Stepper) Steps() int { return st.steps }

// SetSteps sets the step counter (when resuming).
func (st *Stepper) SetSteps(n int) { st.steps = n }

// Step runs one optimizer step. forward(s, i) builds micro-batch i's loss
// (a scalar) in scope s, which the Stepper releases after backward. It
// returns the mean loss of the micro-batches and whether the optimizer
// stepped (false when the scaler skipped it).
func (st *Stepper) Step(forward func(s *autograd.Scope, i int) *autograd.Tensor) (loss float64, stepped bool, err error) {
	k := max(st.Accum, 1)
	if st.Schedule != nil {
		st.Opt.SetLR(st.Schedule.LR(st.steps))
	}
	s := autograd.NewScope()
	defer s.Release()
	for i := range k {
		err = autograd.Try(func() {
			var l *autograd.Tensor
			s.SetPhase("forward")
			s.Autocast(st.Autocast, func() { l = forward(s, i) })
			loss += l.Item() / float64(k)
			if k > 1 {
				l = l.Scale(1 / float64(k))
			}
			if st.Scaler != nil {
				l = st.Scaler.ScaleLoss(l)
			}
			backward := func() {
				if err := l.Backward(); err != nil {
					panic(err)
				}
			}
			if st.Sync != nil && i < k-1 {
				st.Sync.NoSync(backward)
			} else {
				backward()
			}
		})
		s.Release()
		if err != nil {
			st.Opt.ZeroGrad()
			return 0, false, fmt.Errorf("micro-batch %d of step %d: %w", i, st.steps, err)
		}
	}
	s.SetPhase("optimizer")
	stepped, err = st.update()
	st.steps++
	return loss, stepped, err
}

// update unscales, clips, steps and updates the scale.
func (st *Stepper) update() (bool, error) {
	defer st.Opt.ZeroGrad()
	sc := st.Scaler
	if sc == nil {
		sc = amp.NewScaler(dtype.F32, amp.ScalerConfig{}) // a no-op
	}
	if err := sc.Unscale(st.Opt); err != nil {
		return false, err
	}
	if st.Clip > 0 {
		norm, err := optim.ClipGradNormOf(st.Opt, st.Clip)
		if err != nil {
			return false, err
		}
		if (math.IsInf(norm, 0) || math.IsNaN(norm)) && !sc.Enabled() {
			return false, fmt.Errorf("step %d: gradient norm is %v", st.steps, norm)
		}
	}
	stepped, err := sc.Step(st.Opt)
	if err != nil {
		return false, err
	}
	return stepped, sc.Update()
}
