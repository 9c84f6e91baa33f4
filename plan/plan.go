package plan

import (
	"errors"
	"fmt"
	"time"

	"github.com/headroom-ml/headroom/amp"
	"github.com/headroom-ml/headroom/autograd"
	"github.com/headroom-ml/headroom/checkpoint"
	"github.com/headroom-ml/headroom/device"
	"github.com/headroom-ml/headroom/device/cpu"
	"github.com/headroom-ml/headroom/device/meta"
	"github.com/headroom-ml/headroom/dtype"
	"github.com/headroom-ml/headroom/nn"
	"github.com/headroom-ml/headroom/optim"
	"github.com/headroom-ml/headroom/parallel"
	"github.com/headroom-ml/headroom/train"
)

// Config says what to plan. Zero fields take the model's defaults.
type Config struct {
	Model string
	// Batch is the global batch (split over Ranks, then into Accum
	// micro-batches); Seq the sequence length of a GPT (default: its
	// context); Image the side of a ResNet's input (default: the model's).
	Batch, Seq, Image int
	// AMP is the 16-bit dtype (Invalid: F32 training). By default it means
	// mixed precision as ZeRO counts it: parameters and gradients in AMP,
	// F32 master weights and Adam state in the optimizer. Autocast instead
	// keeps F32 parameters and runs the forward under autocast.
	AMP      dtype.DType
	Autocast bool
	// Checkpoint cuts the blocks into N checkpointed segments (-1: ⌈√n⌉);
	// CheckpointBudget plans the segments under a byte budget instead.
	Checkpoint       int
	CheckpointBudget int64
	// Accum is the number of micro-batches per step (default 1).
	Accum int
	// Ranks, Zero (0-3) and Offload: data parallelism.
	Ranks   int
	Zero    int
	Offload bool
	// Optimizer is "adamw", "adam" or "sgd" (default: the model's).
	Optimizer string
	// Steps is the number of steps run (default 2: the first allocates
	// the optimizer's state, the second shows the steady state).
	Steps int
	// Capacity is each compute device's capacity (0: unlimited).
	Capacity int64
	// Timeline records rank 0's memory timeline during the last step.
	Timeline bool

	// onCPU runs the same step on cpu devices: the measurement a
	// prediction is checked against.
	onCPU bool
}

// Rank is one rank's predicted memory: the peak of each tag and of all
// together, in exact bytes.
type Rank struct {
	Device string `json:"device"`
	train.PeakBytes
	// ModelState is parameter + gradient + optimizer (their peaks): the
	// "model states" of the ZeRO paper.
	ModelState int64 `json:"model_state_bytes"`
	// AtPeak is what each tag held at the moment the total peaked: its
	// tags add up to its Total, the peak (the tags' own peaks, above, may
	// come at other moments and need not add up).
	AtPeak train.PeakBytes `json:"at_peak"`
	// Host is the offload host's memory (nil without offload).
	Host *train.PeakBytes `json:"host,omitempty"`
}

// Prediction is the planner's answer.
type Prediction struct {
	Config Config `json:"-"`
	Model  string `json:"model"`
	Params int64  `json:"params"`
	Batch  int    `json:"batch"`
	Seq    int    `json:"seq,omitempty"`
	Image  int    `json:"image,omitempty"`
	Ranks  []Rank `json:"ranks"`
	// OOM is the out-of-memory error when the step does not fit Capacity.
	OOM *device.OOMError `json:"-"`
	// Timeline is rank 0's last step (with Config.Timeline).
	Timeline *device.Timeline `json:"-"`
	// Seconds is the wall time of the last step and Loss its loss (on
	// meta devices: no arithmetic, loss 0).
	Seconds float64 `json:"-"`
	Loss    float64 `json:"-"`
}

// Measure runs c's step for real on cpu devices: what Predict predicts.
func Measure(c Config) (*Prediction, error) {
	c.onCPU = true
	return Predict(c)
}

// Validate checks c as Predict would (the model, the batch against ranks
// and micro-batches, the stage, the dtype, the optimizer…) without
// running anything.
func (c Config) Validate() error {
	_, _, err := c.resolved()
	return err
}

// resolved fills in defaults and checks c.
func (c Config) resolved() (Config, Model, error) {
	m, err := Lookup(c.Model)
	if err != nil {
		return c, m, err
	}
	if c.Batch == 0 {
		c.Batch = m.Batch
	}
	if c.Accum == 0 {
		c.Accum = 1
	}
	if c.Ranks == 0 {
		c.Ranks = 1
	}
	if c.Steps == 0 {
		c.Steps = 2
	}
	if c.Optimizer == "" {
		c.Optimizer = m.Optimizer
	}
	if m.Kind == "gpt" {
		if c.Seq == 0 {
			c.Seq = m.GPT.Context
		}
		if c.Seq > m.GPT.Context || c.Seq < 1 {
			return c, m, fmt.Errorf("plan: sequence %d for %s: want 1…%d (its context)", c.Seq, m.Name, m.GPT.Context)
		}
	} else if c.Image == 0 {
		c.Image = m.Image
	}
	switch {
	case c.Batch < 1 || c.Batch%(c.Ranks*c.Accum) != 0:
		return c, m, fmt.Errorf("plan: batch %d must be a positive multiple of ranks × accum = %d", c.Batch, c.Ranks*c.Accum)
	case c.Zero < 0 || c.Zero > 3:
		return c, m, fmt.Errorf("plan: ZeRO stage %d: want 0, 1, 2 or 3", c.Zero)
	case c.Offload && c.Zero == 0:
		return c, m, fmt.Errorf("plan: offload needs ZeRO stage 1 or more")
	case c.AMP != dtype.Invalid && !c.AMP.IsLowPrecision():
		return c, m, fmt.Errorf("plan: amp dtype %s: want f16 or bf16", c.AMP)
	case c.Autocast && c.AMP == dtype.Invalid:
		return c, m, fmt.Errorf("plan: autocast needs an amp dtype")
	case c.Checkpoint != 0 && c.CheckpointBudget != 0:
		return c, m, fmt.Errorf("plan: checkpoint segments and a checkpoint budget: choose one")
	}
	switch c.Optimizer {
	case "adamw", "adam", "sgd":
	default:
		return c, m, fmt.Errorf("plan: optimizer %q: want adamw, adam or sgd", c.Optimizer)
	}
	return c, m, nil
}

// Predict runs c's training step on meta devices and returns every rank's
// exact memory. A step that does not fit c.Capacity is not an error: the
// prediction's OOM says so (with what was live when it ran out).
func Predict(c Config) (pred *Prediction, err error) {
	c, m, err := c.resolved()
	if err != nil {
		return nil, err
	}
	p := &Prediction{Config: c, Model: m.Name, Batch: c.Batch}
	if m.Kind == "gpt" {
		p.Seq = c.Seq
	} else {
		p.Image = c.Image
	}
	newDev := func(i int, capacity int64) *device.Device {
		if c.onCPU {
			return cpu.New(i, device.Options{Capacity: capacity})
		}
		return meta.New(i, device.Options{Capacity: capacity})
	}
	devs := make([]*device.Device, c.Ranks)
	hosts := make([]*device.Device, c.Ranks)
	defer func() { // the devices' statistics stay readable after Close
		// A failed step gives back all it allocated, so what a device
		// still holds here is a leak, after an out-of-memory step too.
		if cerr := closeAll(devs, hosts); err == nil && cerr != nil {
			pred, err = nil, fmt.Errorf("plan: %w", cerr)
		}
	}()
	res := make([]result, c.Ranks)
	distributed := c.Ranks > 1 || c.Zero > 0 || c.Offload
	run := func(rank int, comm parallel.Communicator) error {
		devs[rank] = newDev(rank, c.Capacity)
		if c.Offload {
			hosts[rank] = newDev(100+rank, 0)
		}
		var err error
		res[rank], err = step(c, m, devs[rank], hosts[rank], comm, distributed, rank == 0 && c.Timeline)
		return err
	}
	if distributed {
		err = parallel.Run(parallel.NewGroup(c.Ranks), func(cm parallel.Communicator) error { return run(cm.Rank(), cm) })
	} else {
		err = run(0, nil)
	}
	var oom *device.OOMError
	if errors.As(err, &oom) {
		p.OOM, err = oom, nil
	}
	if err != nil {
		return nil, err
	}
	p.Params, p.Timeline, p.Seconds, p.Loss = res[0].params, res[0].timeline, res[0].seconds, res[0].loss
	for i, d := range devs {
		st := d.Stats()
		r := Rank{Device: d.Name(), PeakBytes: train.Peaks(st), AtPeak: atPeak(st)}
		r.ModelState = r.Parameter + r.Gradient + r.Optimizer
		if hosts[i] != nil {
			h := train.Peaks(hosts[i].Stats())
			r.Host = &h
		}
		p.Ranks = append(p.Ranks, r)
	}
	return p, nil
}

// closeAll closes the devices of a run (nil entries are skipped) and
// returns what they still held as a *device.LeakError.
func closeAll(lists ...[]*device.Device) error {
	var errs []error
	for _, l := range lists {
		for _, d := range l {
			if d != nil {
				errs = append(errs, d.Close())
			}
		}
	}
	return errors.Join(errs...)
}

// atPeak reads Stats.AtPeak as PeakBytes.
func atPeak(st device.Stats) train.PeakBytes {
	a := func(t device.Tag) int64 { return st.AtPeak[t] }
	return train.PeakBytes{
		Total: st.Requested.Peak, Parameter: a(device.Parameter), Gradient: a(device.Gradient),
		Optimizer: a(device.Optimizer), Activation: a(device.Activation), Workspace: a(device.Workspace),
		Communication: a(device.Communication), Other: a(device.Other),
	}
}

// result is what a rank's run returns besides its device's statistics.
type result struct {
	params   int64
	timeline *device.Timeline
	seconds  float64
	loss     float64
}

// step builds the model on dev and runs c.Steps training steps on
// synthetic data exactly as the example programs do.
func step(c Config, m Model, dev, host *device.Device, comm parallel.Communicator, distributed, timeline bool) (result, error) {
	var res result
	pdt, forward := dtype.F32, dtype.Invalid
	switch {
	case c.AMP != dtype.Invalid && c.Autocast:
		forward = c.AMP
	case c.AMP != dtype.Invalid:
		pdt = c.AMP
	}
	gen := autograd.NewGenerator(1)
	var model nn.Module
	var hook *func([]nn.Layer, *autograd.Tensor) *autograd.Tensor
	var err error
	if terr := autograd.Try(func() { model, hook, err = m.build(nn.NewBuilder(dev, pdt, 1), gen, m.GPT) }); terr != nil {
		return res, terr
	}
	if err != nil {
		return res, err
	}
	defer nn.Release(model)
	switch {
	case c.CheckpointBudget > 0:
		*hook = checkpoint.NewBudget(c.CheckpointBudget).Forward
	case c.Checkpoint != 0:
		seg := max(c.Checkpoint, 0) // -1: ⌈√n⌉
		*hook = func(ls []nn.Layer, x *autograd.Tensor) *autograd.Tensor { return checkpoint.Sequential(ls, seg, x) }
	}
	master := pdt != dtype.F32
	var opt optim.Optimizer
	var sync interface{ NoSync(func()) }
	if distributed {
		d, err := parallel.NewDDP(comm, model, parallel.DDPConfig{Zero: c.Zero, Host: host})
		if err != nil {
			return res, err
		}
		defer d.Release()
		dev.ResetPeak() // as the examples do: moving into the flat buffer holds the parameters twice for a moment
		sync = d
		var po *parallel.Optimizer
		switch c.Optimizer {
		case "sgd":
			po, err = parallel.NewSGD(d, optim.SGDConfig{LR: 0.01, Momentum: 0.9, Nesterov: true, WeightDecay: 5e-4, MasterWeights: master})
		case "adam":
			po, err = parallel.NewAdam(d, optim.AdamConfig{MasterWeights: master})
		default:
			po, err = parallel.NewAdamW(d, optim.AdamConfig{Beta2: 0.99, MasterWeights: master})
		}
		if err != nil {
			return res, err
		}
		defer po.Release()
		opt = po
	} else {
		switch c.Optimizer {
		case "sgd":
			opt, err = optim.NewSGD(model.Params(), optim.SGDConfig{LR: 0.01, Momentum: 0.9, Nesterov: true, WeightDecay: 5e-4, MasterWeights: master})
		case "adam":
			opt, err = optim.NewAdam(model.Params(), optim.AdamConfig{MasterWeights: master})
		default:
			opt, err = optim.NewAdamW(model.Params(), optim.AdamConfig{Beta2: 0.99, MasterWeights: master})
		}
		if err != nil {
			return res, err
		}
		defer opt.Release()
	}
	gradDT := dtype.F32
	if master {
		gradDT = pdt
	}
	st := &train.Stepper{Opt: opt, Scaler: amp.NewScaler(gradDT, amp.ScalerConfig{}), Autocast: forward, Accum: c.Accum, Sync: sync}
	if m.Kind == "gpt" {
		st.Clip = 1
	}
	micro := c.Batch / c.Ranks / c.Accum
	fwd := batchLoss(m, c, dev, model, micro, pdt)
	for i := range c.Steps {
		last := i == c.Steps-1
		if last && timeline {
			dev.StartTimeline()
		}
		began := time.Now()
		loss, _, err := st.Step(fwd)
		if last {
			res.seconds, res.loss = time.Since(began).Seconds(), loss
			if timeline {
				res.timeline = dev.StopTimeline()
			}
		}
		if err != nil {
			return res, err // the Stepper's error names the step
		}
	}
	res.params = nn.Count(model)
	return res, nil
}

// batchLoss returns the forward of one micro-batch of zeros.
func batchLoss(m Model, c Config, dev *device.Device, model nn.Module, micro int, pdt dtype.DType) func(*autograd.Scope, int) *autograd.Tensor {
	if m.Kind == "gpt" {
		g := model.(*nn.GPT)
		idx := make([]int64, micro*c.Seq)
		return func(s *autograd.Scope, _ int) *autograd.Tensor {
			logits := g.Forward(s.FromInt64s(dev, []int{micro, c.Seq}, idx))
			flat := logits.Reshape(-1, m.GPT.Vocab)
			logits.Release()
			return autograd.CrossEntropy(flat, s.FromInt64s(dev, []int{len(idx)}, idx), autograd.CEOptions{})
		}
	}
	r := model.(*nn.ResNet)
	x := make([]float32, micro*m.Channels*c.Image*c.Image)
	y := make([]int64, micro)
	return func(s *autograd.Scope, _ int) *autograd.Tensor {
		xs := s.FromFloat32s(dev, []int{micro, m.Channels, c.Image, c.Image}, x)
		if pdt != dtype.F32 {
			xs = xs.Cast(pdt)
		}
		return autograd.CrossEntropy(r.Forward(xs), s.FromInt64s(dev, []int{micro}, y), autograd.CEOptions{})
	}
}
