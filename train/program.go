package train

import (
	"fmt"
	"io"

	"github.com/headroom-ml/headroom/amp"
	"github.com/headroom-ml/headroom/autograd"
	"github.com/headroom-ml/headroom/device"
	"github.com/headroom-ml/headroom/dtype"
	"github.com/headroom-ml/headroom/nn"
	"github.com/headroom-ml/headroom/optim"
	"github.com/headroom-ml/headroom/parallel"
)

// Replica is a program's model on one device — the run's one device, or
// one rank's — with the data it trains on.
type Replica interface {
	// Module is the model.
	Module() nn.Module
	// Optimizer makes the model's optimizer: over d's shard under data
	// parallelism, over Module's parameters when d is nil.
	Optimizer(d *parallel.DDP) (optim.Optimizer, error)
	// Forward returns the loss of micro-batch i of the replica's part of
	// the next step, built in s (Stepper.Step's forward).
	Forward(s *autograd.Scope, i int) *autograd.Tensor
	// SaveState stores the replica's own state (its data order, its
	// generators) in a snapshot's Extra and Generators; LoadState
	// restores it.
	SaveState(snap *Snapshot) error
	LoadState(snap *Snapshot) error
}

// Built is implemented by a Replica that says which builder made its
// model (Common.ModelBuilder): under --zero 3 the rank's DDP then writes
// its shard of a deferred model from the builder's records.
type Built interface {
	Builder() *nn.Builder
}

// Program is what Train needs to know of a training program; R is its
// replica type.
type Program[R Replica] struct {
	// Name is the program's: its output's first word, the report's
	// example, the alert snapshot's "<name>-alert.safetensors".
	Name string
	// Model names the model in the report; Title describes it and Data
	// the data in the header line ("small", "MNIST").
	Model, Title, Data string
	// Metric is the report's EvalMetric.
	Metric string
	// Steps is the run's number of optimizer steps (Common.TotalSteps).
	Steps int
	// Schedule sets the learning rate of each step; Clip is the gradient
	// norm limit (0: none).
	Schedule optim.Schedule
	Clip     float64
	// New builds the replica of rank (0 on one device) on dev, with
	// parameters of dtype param.
	New func(dev *device.Device, param dtype.DType, rank int) (R, error)
	// Evaluate runs after training, on rank 0: it evaluates the model
	// (after pruning or quantizing it, say). When it trains or changes
	// the model it sets the Run's Loss and Trained to what the report
	// should say.
	Evaluate func(r *Run[R]) (Eval, error)
}

// Eval is a program's evaluation after training.
type Eval struct {
	// Value is the report's Eval; Line says it at the start of the result
	// line ("test accuracy 97.10% on 10000 images").
	Value float64
	Line  string
	// After is printed after the result line ("": nothing).
	After string
	// Extra holds the report's Extra entries.
	Extra map[string]any
}

// Run is one replica in training: its device, optimizer and Stepper, and
// where the run stands.
type Run[R Replica] struct {
	// R is the replica, C the run's flags, Dev its device.
	R   R
	C   *Common
	Dev *device.Device
	// Opt is the optimizer and Stepper steps it (an Evaluate that replaces
	// the optimizer sets both).
	Opt     optim.Optimizer
	Stepper *Stepper
	// Out receives the run's output (io.Discard on ranks other than 0).
	Out io.Writer
	// Start is the first step to train (after --resume), End the step
	// after the last one (--steps, or --stop-after).
	Start, End int
	// Loss is the last training step's loss.
	Loss float64
	// Trained is the device's statistics after training: the report's.
	Trained device.Stats

	ddp      *parallel.DDP
	skipped  int   // steps the loss scaler skipped in training
	initRead int64 // the bytes of tensor data --init read (on this rank)
}

// newRun builds rank's replica on dev (rank nil: the one device's),
// wraps it in the rank's DDP, loads --init into it (LoadModel), and makes
// its optimizer and Stepper.
func newRun[R Replica](c *Common, out io.Writer, p *Program[R], dev *device.Device, rank *Rank) (*Run[R], error) {
	param, forward, grad, err := c.Precision()
	if err != nil {
		return nil, err
	}
	index := 0
	if rank != nil {
		index = rank.Comm.Rank()
	}
	rep, err := p.New(dev, param, index)
	if err != nil {
		return nil, err
	}
	r := &Run[R]{R: rep, C: c, Dev: dev, Out: out, End: c.End(p.Steps)}
	if c.GradF32 { // before the DDP, which takes the gradients' dtype from the parameters
		if _, err := amp.MainGradsF32(rep.Module().Params()); err != nil {
			r.release()
			return nil, err
		}
	}
	if rank != nil {
		var b *nn.Builder
		if bt, ok := any(rep).(Built); ok {
			b = bt.Builder()
		}
		if r.ddp, err = rank.DDP(c, rep.Module(), b); err != nil {
			r.release()
			return nil, err
		}
	}
	if c.Init != "" && c.Resume == "" { // resuming, the snapshot holds the model
		if r.initRead, err = LoadModel(c.Init, rep.Module(), r.ddp); err != nil {
			r.release()
			return nil, err
		}
	}
	opt, err := rep.Optimizer(r.ddp)
	if err != nil {
		r.release()
		return nil, err
	}
	r.Opt = opt
	r.Stepper = &Stepper{Opt: opt, Scaler: amp.NewScaler(grad, amp.ScalerConfig{}), Autocast: forward, Accum: c.Accum,
		Clip: p.Clip, Schedule: p.Schedule, Model: rep.Module(), SaveState: undo(rep),
		StepInBackward: c.StepInBackward}
	if r.ddp != nil {
		r.Stepper.Sync = r.ddp
	}
	if rank != nil && c.StepInBackward {
		r.Stepper.Host = rank.Host // cpu:100+r holds the undo copies
	}
	return r, nil
}

// undo returns a Stepper.SaveState that puts the replica's own state (its
// data order, its samplers) back when a step fails, so that the step can be
// retried and reads the same batch. Replica.SaveState only marshals
// generator states, so its error cannot happen in practice; were it to,
// the step would run without the undo.
func undo(rep Replica) func() (restore func()) {
	return func() func() {
		var snap Snapshot
		if err := rep.SaveState(&snap); err != nil {
			return func() {}
		}
		return func() { _ = rep.LoadState(&snap) } // the state it saved itself
	}
}

// release releases the optimizer, the DDP engine and the model.
func (r *Run[R]) release() {
	if r.Opt != nil {
		r.Opt.Release()
	}
	if r.ddp != nil {
		r.ddp.Release()
	}
	nn.Release(r.R.Module())
}

// header prints the run's first line — the program, the model, where it
// runs, the data, the batch, the steps and the techniques — and the loss
// scaler's note under mixed precision.
func (r *Run[R]) header(p *Program[R], placement, batch string) {
	m := r.R.Module()
	fmt.Fprintf(r.Out, "%s: %s (%d parameters, %s) on %s, %s, %s, %d steps%s\n", p.Name, p.Title, nn.Count(m),
		device.FormatBytes(nn.ParamBytes(m)), placement, p.Data, batch, p.Steps, r.C.Describe())
	if ac, _ := r.C.AMPDType(); r.Stepper.Scaler.Enabled() || ac != dtype.Invalid {
		fmt.Fprintln(r.Out, "amp:", r.Stepper.Scaler.Note())
	}
	if r.C.Init != "" && r.C.Resume == "" {
		fmt.Fprintf(r.Out, "init: %s (%s of tensor data read here)\n", r.C.Init, device.FormatBytes(r.initRead))
	}
}

// resume restores --resume's snapshot — the model, the optimizer, the
// scaler, the replica's state and the step; a rank of a data-parallel run
// its own shard (LoadShard) — and says where the run resumes; a snapshot
// past the run's last step is refused.
func (r *Run[R]) resume(steps int) error {
	path := r.C.Resume
	if path == "" {
		return nil
	}
	load := LoadSnapshot
	if r.ddp != nil {
		load = func(path string, m nn.Module, o optim.Optimizer) (Snapshot, error) {
			return LoadShard(path, r.ddp, m, o)
		}
	}
	snap, err := load(path, r.R.Module(), r.Opt)
	if err != nil {
		return err
	}
	if err := r.C.checkResumeStep(snap.Step, steps); err != nil {
		return err
	}
	if err := r.R.LoadState(&snap); err != nil {
		return fmt.Errorf("resume from %s: %w", path, err)
	}
	if snap.Scaler != nil {
		if err := r.Stepper.Scaler.Load(*snap.Scaler); err != nil {
			return fmt.Errorf("resume from %s: %w", path, err)
		}
	}
	r.Stepper.SetSteps(snap.Step)
	r.Start, r.Loss = snap.Step, snap.Loss
	fmt.Fprintf(r.Out, "resumed from step %d of %d (%s)", snap.Step, steps, path)
	if r.Start == r.End {
		fmt.Fprint(r.Out, ": no step left to train")
	}
	fmt.Fprintln(r.Out)
	return nil
}

// save writes the run's snapshot at step to path: the model, the
// optimizer, the scaler, the replica's state and the run's configuration;
// a rank of a data-parallel run its own shard (SaveShard).
func (r *Run[R]) save(path string, step int) error {
	snap := Snapshot{Program: r.C.fs.Name(), Config: r.C.Config(), Step: step, Loss: r.Loss}
	if err := r.R.SaveState(&snap); err != nil {
		return fmt.Errorf("snapshot %s: %w", path, err)
	}
	if s := r.Stepper.Scaler.State(); r.Stepper.Scaler.Enabled() {
		snap.Scaler = &s
	}
	if r.ddp != nil {
		return SaveShard(path, r.ddp, r.R.Module(), r.Opt, snap)
	}
	return SaveSnapshot(path, r.R.Module(), r.Opt, snap)
}
