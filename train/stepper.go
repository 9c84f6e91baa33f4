package train

import (
	"fmt"
	"math"

	"github.com/headroom-ml/headroom/amp"
	"github.com/headroom-ml/headroom/autograd"
	"github.com/headroom-ml/headroom/device"
	"github.com/headroom-ml/headroom/dtype"
	"github.com/headroom-ml/headroom/nn"
	"github.com/headroom-ml/headroom/optim"
)

// Stepper runs optimizer steps with the memory techniques of a run:
// autocast, loss scaling, gradient accumulation, clipping and a learning
// rate schedule. It is the documented pattern of gradient accumulation in
// code:
//
//	for i := range k {                    // k micro-batches of the batch
//		loss := forward(micro i) / k      // in its own scope, under autocast
//		scaler.ScaleLoss(loss).Backward() // gradients add up in the leaves
//	}
//	scaler.Unscale(opt)                   // once, before clipping
//	ClipGradNorm(params, clip)
//	scaler.Step(opt)                      // skipped on overflow
//	scaler.Update()                       // only after the step
//	opt.ZeroGrad()
//
// A Step either completes or changes nothing: when it fails (out of
// memory, misuse, a non-finite loss or gradient norm without an enabled
// loss scaler) it returns the error and leaves the device holding exactly
// what it held before, the parameters, optimizer state, step counters,
// learning rate and loss scaler as they were, the gradients zero (as a
// Step begins and ends), the model's buffers (BatchNorm running
// statistics) as they were when Model is set, and every generator the
// step's ops drew from (dropout) rewound. Retrying the step — after
// raising the capacity, say — then computes bit for bit what the step
// would have computed had it not failed, provided forward feeds it the
// same batch: read micro-batch i of the step by position, or set
// SaveState to rewind the data loader. (With data parallelism a rank's
// failure aborts the whole group: see parallel.Run.)
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
	// Model, when set, is the model whose buffers (the Params marked
	// Buffer: BatchNorm's running statistics) a failed Step puts back. Each
	// Step copies them to host memory first (2·C numbers per BatchNorm; no
	// device memory); nil skips that, and a failed step then leaves the
	// statistics of its forward passes in place.
	Model nn.Module
	// SaveState, when set, runs as each Step begins and returns the
	// function a failed Step runs to put back what forward consumes besides
	// the model: a data loader's position, so that a retried step reads the
	// same batch —
	//
	//	st.SaveState = func() func() {
	//		at := loader.State()
	//		return func() { loader.SetState(at) }
	//	}
	SaveState func() (restore func())
	// StepInBackward updates each parameter inside the last micro-batch's
	// backward as soon as its gradient is complete, and frees the gradient
	// at once (see stepinbackward.go and the package doc): the gradients
	// of the Accum−1 micro-batches before it accumulate as usual. Not with
	// Clip. The optimizer must be an optim.ParamStepper, or, with Sync, a
	// *parallel.Optimizer (without offload), which steps each gradient
	// bucket's share as its reduction completes (parallel.InBackward).
	StepInBackward bool
	// Host is the device that holds StepInBackward's undo copies of the
	// parameters and their optimizer state while a step runs (required
	// with it; the programs use cpu:100, the planner meta:100).
	Host *device.Device

	steps int
}

// Steps returns the optimizer steps taken (skipped ones included).
func (st *Stepper) Steps() int { return st.steps }

// SetSteps sets the step counter (when resuming).
func (st *Stepper) SetSteps(n int) { st.steps = n }

// Step runs one optimizer step. forward(s, i) builds micro-batch i's loss
// (a scalar) in scope s, which the Stepper releases after backward. It
// returns the mean loss of the micro-batches and whether the optimizer
// stepped (false when the scaler skipped it). On error nothing has
// changed (see Stepper); the error names the step and, when one failed,
// the micro-batch. A non-finite loss or gradient norm is an error unless
// an enabled Scaler is there to skip the step (its gradients overflow:
// PyTorch's GradScaler semantics). Without one, the norm is computed even
// when Clip is 0: one read of the gradients and one F64 element of
// workspace per device, as clipping takes.
func (st *Stepper) Step(forward func(s *autograd.Scope, i int) *autograd.Tensor) (loss float64, stepped bool, err error) {
	if st.Opt == nil {
		return 0, false, fmt.Errorf("train: step %d: the Stepper has no optimizer", st.steps)
	}
	ib, err := st.newInBackward()
	if err != nil {
		return 0, false, fmt.Errorf("train: step %d: %w", st.steps, err)
	}
	s := autograd.NewScope()
	stopLog := s.LogRNG()
	restore := st.save()
	defer func() {
		draws := stopLog()
		if err != nil {
			ib.rollback()
			restore()
			autograd.RewindRNG(draws)
		}
	}()
	if st.Schedule != nil {
		st.Opt.SetLR(st.Schedule.LR(st.steps))
	}
	k := max(st.Accum, 1)
	for i := range k {
		if i == k-1 {
			ib.attach()
		}
		l, err := st.micro(s, forward, i, k)
		if ierr := ib.detach(); err == nil && i == k-1 {
			err = ierr
		}
		if err != nil {
			return 0, false, fmt.Errorf("micro-batch %d of step %d: %w", i, st.steps, err)
		}
		loss += l / float64(k)
	}
	s.SetPhase("optimizer")
	if stepped, err = st.update(ib.target(st.Opt)); err != nil {
		return 0, false, fmt.Errorf("step %d: %w", st.steps, err)
	}
	if !stepped {
		ib.rollback() // the scaler skipped the step
	}
	ib.release()
	st.steps++
	return loss, stepped, nil
}

// save records what a failed step must put back and returns the function
// that does: gradients to zero, the learning rate, the scaler, the model's
// buffers and the caller's state (SaveState).
func (st *Stepper) save() (restore func()) {
	lr := st.Opt.LR()
	undo := []func(){st.Opt.ZeroGrad, func() { st.Opt.SetLR(lr) }}
	if st.Scaler != nil {
		undo = append(undo, st.Scaler.Mark())
	}
	if st.Model != nil {
		undo = append(undo, saveBuffers(st.Model))
	}
	if st.SaveState != nil {
		undo = append(undo, st.SaveState())
	}
	return func() {
		for _, f := range undo {
			f()
		}
	}
}

// saveBuffers copies m's buffers to host memory and returns the function
// that writes them back. A model with a StepBuffers method (lora.GPT,
// whose frozen base is a buffer no step writes) has only those copied.
func saveBuffers(m nn.Module) (restore func()) {
	var ts []*autograd.Tensor
	var vals [][]float64
	ps := m.Params()
	if sb, ok := m.(interface{ StepBuffers() []nn.Param }); ok {
		ps = sb.StepBuffers()
	}
	for _, p := range ps {
		if p.Buffer && p.T != nil && !p.T.Released() {
			ts = append(ts, p.T)
			vals = append(vals, p.T.Float64s())
		}
	}
	return func() {
		for i, t := range ts {
			t.SetFloat64s(vals[i])
		}
	}
}

// micro runs micro-batch i of k in s (released when it returns) and
// returns its loss. Its backward adds the gradients of loss/k (scaled by
// the Scaler) into the leaves.
func (st *Stepper) micro(s *autograd.Scope, forward func(*autograd.Scope, int) *autograd.Tensor, i, k int) (loss float64, err error) {
	err = s.Run(func() error {
		var l *autograd.Tensor
		s.SetPhase("forward")
		s.Autocast(st.Autocast, func() { l = forward(s, i) })
		if l == nil {
			return fmt.Errorf("forward returned no loss")
		}
		if loss = l.Item(); math.IsNaN(loss) || math.IsInf(loss, 0) {
			if st.Scaler == nil || !st.Scaler.Enabled() {
				return fmt.Errorf("loss is %v (no loss scaler is enabled to skip the step)", loss)
			}
		}
		if k > 1 {
			l = l.Scale(1 / float64(k))
		}
		if st.Scaler != nil {
			l = st.Scaler.ScaleLoss(l)
		}
		if st.Sync == nil || i == k-1 {
			return l.Backward()
		}
		var berr error
		st.Sync.NoSync(func() { berr = l.Backward() })
		return berr
	})
	return loss, err
}

// update unscales, clips, steps o (st.Opt, or what is left of it after a
// data-parallel step inside backward) and updates the scale.
func (st *Stepper) update(o optim.Optimizer) (bool, error) {
	defer st.Opt.ZeroGrad()
	sc := st.Scaler
	if sc == nil {
		sc = amp.NewScaler(dtype.F32, amp.ScalerConfig{}) // a no-op
	}
	if err := sc.Unscale(o); err != nil {
		return false, err
	}
	if st.Clip > 0 || !sc.Enabled() {
		// Without an enabled scaler to skip it, a step with a non-finite
		// gradient would write NaN into every parameter: the norm (one
		// read of the gradients; clipping computes it anyway) stops it.
		clip := st.Clip
		if clip <= 0 {
			clip = math.Inf(1)
		}
		norm, err := optim.ClipGradNormOf(o, clip)
		if err != nil {
			return false, err
		}
		if (math.IsInf(norm, 0) || math.IsNaN(norm)) && !sc.Enabled() {
			return false, fmt.Errorf("gradient norm is %v (no loss scaler is enabled to skip the step)", norm)
		}
	}
	stepped, err := sc.Step(o)
	if err != nil {
		return false, err
	}
	return stepped, sc.Update()
}
