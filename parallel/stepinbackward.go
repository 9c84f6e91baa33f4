package parallel

import (
	"fmt"
	"math"

	"github.com/headroom-ml/headroom/autograd"
	"github.com/headroom-ml/headroom/device"
	"github.com/headroom-ml/headroom/nn"
	"github.com/headroom-ml/headroom/optim"
)

// InBackward is one optimizer step taken inside the last micro-batch's
// backward under data parallelism (train.Stepper.StepInBackward with a
// DDP): once a gradient bucket's reduction completed — the all-reduce of
// stages 0 and 1, the reduce-scatter into the shard of stages 2 and 3 —
// the rank unscales its share of the bucket (stage 0: the bucket's
// parameters; stages 1–3: its piece), checks it for inf/NaN and updates it
// with optim.ParamStepper.StepParam, keeping the undo copies on the host:
// under stage 3 as each reduction completes, under stages 0–2 when the
// last one has, at the end of backward (see bucket).
//
// The decision to keep the step is collective: a rank's share can be
// finite while another rank's overflowed, so a rank that finds a
// non-finite share stops updating, keeps that gradient, and the
// optimizer returned by Rest — whose Params are only that gradient and
// whose AllSum adds over the ranks — lets amp.Scaler.Unscale find the
// overflow on every rank at the end of backward: every rank then skips
// the step and rolls back from its undo copies (Rollback). Rest's Step
// finishes a kept step: the optimizer's step count, the all-gather of the
// updated pieces into every rank's flat buffer (stages 1 and 2, deferred
// to here so that a rolled-back step leaves every rank's flat buffer as
// it was), the buffers' broadcast.
//
// The gradients live in the DDP's buffers, whose bytes it does not change:
// stages 0 and 1 keep Ψ′ gradient elements, stages 2 and 3 the shard and
// the buckets in flight, as without it. The host holds, at the end of
// backward, Σ over the rank's shares of (share + state bytes).
type InBackward struct {
	o      *Optimizer
	ps     optim.ParamStepper
	host   *device.Device
	scale  float64 // the loss scale (1: none)
	undo   []*optim.Undo
	queued []int            // stages 0–2: the buckets reduced, to step at the pass's end
	err    error            // the first failure inside the hook
	over   *autograd.Tensor // the first share whose gradient is not finite
	name   string
}

// InBackward prepares a step inside backward with loss scale scale (1 when
// no scaler is enabled) and undo copies on host. Start it before the last
// micro-batch's backward and Stop it after. Refused with offload (the
// update runs on the host after backward) and for an inner optimizer that
// cannot update one parameter at a time.
func (o *Optimizer) InBackward(host *device.Device, scale float64) (*InBackward, error) {
	ps, ok := o.inner.(optim.ParamStepper)
	switch {
	case o.host != nil:
		return nil, fmt.Errorf("parallel: step in backward with offload to %s: the update runs on the host after backward; not available", o.d.cfg.Host)
	case !ok:
		return nil, fmt.Errorf("parallel: step in backward: the optimizer %T cannot update one parameter at a time", o.inner)
	case host == nil:
		return nil, fmt.Errorf("parallel: step in backward: no host device for the undo copies")
	case !(scale > 0) || math.IsInf(scale, 0):
		return nil, fmt.Errorf("parallel: step in backward: loss scale %v, want a finite value > 0", scale)
	}
	return &InBackward{o: o, ps: ps, host: host, scale: scale}, nil
}

// Start makes the DDP call the step on each bucket as its reduction
// completes.
func (ib *InBackward) Start() { ib.o.d.reduced = ib.bucket }

// Stop detaches the step from the DDP and returns the first failure
// inside it (the group was aborted then).
func (ib *InBackward) Stop() error {
	ib.o.d.reduced = nil
	return ib.err
}

// shares returns the tensors this rank updates for bucket k.
func (ib *InBackward) shares(k int) []*autograd.Tensor {
	d := ib.o.d
	if ib.o.pieces != nil {
		return []*autograd.Tensor{ib.o.pieces[k]}
	}
	var ts []*autograd.Tensor
	for _, i := range d.lay.buckets[k].params {
		ts = append(ts, d.params[i])
	}
	return ts
}

// bucket is the DDP's call when bucket k's reduction completed (k = −1:
// the pass is complete). Stage 3 steps the bucket's piece now: it is a
// view of the parameter shard, which backward reads only through the
// gathered buffers. Under stages 0–2 the shares are views of the flat
// parameter buffer, one block whose write counter every layer's saved
// parameters check in backward, so an update of any share before the
// pass's end would fail the layers still to come: they step at the end.
func (ib *InBackward) bucket(k int) {
	switch {
	case k >= 0 && ib.o.d.cfg.Zero < 3:
		ib.queued = append(ib.queued, k)
	case k >= 0:
		ib.step(k)
	default:
		for _, q := range ib.queued {
			ib.step(q)
		}
		ib.queued = nil
	}
}

// step unscales, checks and updates the rank's share of bucket k.
func (ib *InBackward) step(k int) {
	if ib.err != nil || ib.over != nil {
		return
	}
	ts := ib.shares(k)
	grads := make([]*autograd.Tensor, len(ts))
	for i, t := range ts {
		grads[i] = t.Grad()
	}
	sums, err := optim.SumSquares("step_in_backward", grads, 1/ib.scale)
	if err != nil {
		ib.fail(err)
		return
	}
	for i, ss := range sums {
		if math.IsNaN(ss) || math.IsInf(ss, 0) {
			ib.overflow(ts[i], grads, k)
			return
		}
	}
	for _, t := range ts {
		u, err := ib.ps.StepParam(t, ib.host)
		if err != nil {
			ib.fail(err)
			return
		}
		ib.undo = append(ib.undo, u)
		if ib.o.pieces == nil {
			t.ZeroGrad() // a view of the bucket buffer: the handle goes
		}
	}
}

// overflow records t's gradient as not finite and scales the bucket's
// gradients back, so that the scaler's Unscale finds it.
func (ib *InBackward) overflow(t *autograd.Tensor, grads []*autograd.Tensor, k int) {
	ib.over, ib.name = t, fmt.Sprintf("bucket %d", k)
	if ib.scale == 1 {
		return
	}
	if err := autograd.Try(func() {
		for _, g := range grads {
			g.ScaleInPlace(ib.scale)
		}
	}); err != nil {
		ib.fail(err)
	}
}

// fail records err and aborts the group: the other ranks' collectives
// fail, so that every rank rolls back.
func (ib *InBackward) fail(err error) {
	ib.err = fmt.Errorf("parallel: step in backward on rank %d: %w", ib.o.d.comm.Rank(), err)
	ib.o.d.comm.Abort(ib.err)
}

// Rollback undoes this rank's updates, newest first.
func (ib *InBackward) Rollback() {
	for i := len(ib.undo) - 1; i >= 0; i-- {
		ib.undo[i].Restore()
	}
	ib.undo = nil
}

// Release frees the undo copies of a step that stays.
func (ib *InBackward) Release() {
	for _, u := range ib.undo {
		u.Release()
	}
	ib.undo = nil
}

// Rest returns the optimizer through which the caller finishes the step
// with amp.Scaler's Unscale and Step (see InBackward).
func (ib *InBackward) Rest() optim.Optimizer { return rest{ib.o, ib} }

// rest is the Optimizer with only what is left after the updates inside
// backward.
type rest struct {
	*Optimizer
	ib *InBackward
}

var _ optim.Sharded = rest{}

// Params returns the share whose gradient was not finite, if any.
func (r rest) Params() []nn.Param {
	if r.ib.over == nil {
		return nil
	}
	return []nn.Param{{Name: r.ib.name, T: r.ib.over}}
}

// AllSum adds v over the ranks (stage 0: every rank saw the same
// all-reduced gradients, so v is every rank's).
func (r rest) AllSum(v float64) (float64, error) { return r.Optimizer.AllSum(v) }

// Step counts the step in the inner optimizer (every share has stepped:
// the pieces' gradients are detached for it), gathers the updated pieces
// and broadcasts the buffers.
func (r rest) Step() error {
	o, d := r.Optimizer, r.Optimizer.d
	if err := d.settle(); err != nil {
		return err
	}
	for _, pc := range o.pieces {
		pc.ZeroGrad()
	}
	err := o.inner.Step()
	for k, pc := range o.pieces {
		pc.SetGrad(d.pieceGrad(k))
	}
	if err != nil {
		d.comm.Abort(err)
		return fmt.Errorf("parallel: step on rank %d: %w", d.comm.Rank(), err)
	}
	if err := o.gatherRegions(); err != nil {
		return fmt.Errorf("parallel: step: %w", err)
	}
	return d.syncBuffers()
}
