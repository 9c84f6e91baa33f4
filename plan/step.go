package plan

import (
	"fmt"
	"time"

	"github.com/headroom-ml/headroom/amp"
	"github.com/headroom-ml/headroom/autograd"
	"github.com/headroom-ml/headroom/device"
	"github.com/headroom-ml/headroom/dtype"
	"github.com/headroom-ml/headroom/nn"
	"github.com/headroom-ml/headroom/optim"
	"github.com/headroom-ml/headroom/parallel"
	"github.com/headroom-ml/headroom/prune"
	"github.com/headroom-ml/headroom/train"
)

// dtypes returns the parameters' dtype and the autocast dtype of c, as
// the examples choose them: --amp alone autocasts the forward, with
// --amp-params the parameters are 16-bit instead.
func (c Config) dtypes() (params, forward dtype.DType) {
	if c.AMPParams {
		return c.AMP, dtype.Invalid
	}
	return dtype.F32, c.AMP
}

// step builds the model on dev and runs c.Steps training steps on
// synthetic data exactly as the example programs do.
func step(c Config, m Model, dev, host *device.Device, comm parallel.Communicator, distributed, timeline bool) (result, error) {
	var res result
	pdt, forward := c.dtypes()
	b := nn.NewBuilder(dev, pdt, 1)
	if c.sharded() {
		b = nn.NewDeferredBuilder(dev, pdt, 1)
	}
	model, err := buildModel(c, m, b, host)
	if err == nil {
		model, err = c.adapt(model)
	}
	if err != nil {
		return res, err
	}
	defer nn.Release(model)
	res.params = nn.Count(model) // shapes only: a deferred model has them before its shard is written
	if c.GradF32 {               // before the DDP, which takes the gradients' dtype from the parameters
		if _, err := amp.MainGradsF32(model.Params()); err != nil {
			return res, err
		}
	}
	var sync interface{ NoSync(func()) }
	if distributed {
		cfg := parallel.DDPConfig{Zero: c.Zero}
		if c.Offload {
			cfg.Host = host
		}
		if c.sharded() {
			cfg.Builder = b
		}
		d, err := parallel.NewDDP(comm, model, cfg)
		if err != nil {
			return res, err
		}
		defer d.Release()
		if !c.sharded() {
			dev.ResetPeak() // as the examples do: moving into the flat buffer holds the parameters twice for a moment
		}
		sync = d
	}
	opt, err := newOptimizer(c, model.Params(), sync, pdt != dtype.F32)
	if err != nil {
		return res, err
	}
	defer opt.Release()
	gradDT := dtype.F32
	if c.AMPParams {
		gradDT = pdt
	}
	// The planner's step must step: meta devices hold no values, so their
	// scaler never sees an overflow, and the prediction is the steady
	// state in which the optimizer has its state. A scale of 1 keeps f16
	// gradients of the synthetic batch finite on cpu as well; the scale's
	// value changes no allocation.
	sc := amp.NewScaler(gradDT, amp.ScalerConfig{InitScale: 1})
	st := &train.Stepper{Opt: opt, Scaler: sc, Autocast: forward, Accum: c.Accum, Sync: sync}
	if m.Kind == "gpt" && !c.StepInBackward {
		st.Clip = 1
	}
	st.StepInBackward, st.Host = c.StepInBackward, host // the host holds the undo copies
	fwd := batchLoss(m, c, dev, model, c.Batch/c.Ranks/c.Accum, pdt)
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
	if sc.Skipped() > 0 {
		return res, fmt.Errorf("the loss scaler skipped %d of %d steps (%s overflowed): the measured step is not the steady state", sc.Skipped(), c.Steps, sc.LastOverflow())
	}
	return res, nil
}

// sharded reports whether c's ranks build the model deferred and write
// only their shards (ZeRO stage 3, as train.Common.ModelBuilder does):
// then construction holds no more than training, and the prediction
// includes it (no peak reset). Validate refuses Prune with stage 3:
// pruning reads the whole model.
func (c Config) sharded() bool { return c.Zero == 3 }

// buildModel makes the model with b with its checkpointing hook set and,
// with c.Prune, pruned; the device's peak is then reset, as
// examples/resnet does after pruning, so the plan is the pruned model's.
func buildModel(c Config, m Model, b *nn.Builder, host *device.Device) (nn.Module, error) {
	dev := b.Dev
	gen := autograd.NewGenerator(1)
	var model nn.Module
	var hook *func([]nn.Layer, *autograd.Tensor) *autograd.Tensor
	var err error
	if terr := autograd.Try(func() { model, hook, err = m.build(b, gen, m.GPT) }); terr != nil {
		return nil, terr
	}
	if err != nil {
		return nil, err
	}
	if run := blockRunner(c, host); run != nil {
		*hook = run
	}
	if c.Prune > 0 {
		switch mm := model.(type) {
		case *nn.ResNet:
			_, err = prune.ResNet(mm, c.Prune, prune.Options{Height: c.Image, Width: c.Image})
		case *nn.GPT:
			_, err = prune.GPT(mm, c.Prune, c.Prune, prune.Options{Tokens: c.Seq})
		}
		if err != nil {
			nn.Release(model)
			return nil, err
		}
		dev.ResetPeak()
	}
	return model, nil
}

// newOptimizer makes c's optimizer as the examples configure it: over the
// data-parallel engine when sync is one (parallel.DDP), over params
// otherwise.
func newOptimizer(c Config, params []nn.Param, sync interface{ NoSync(func()) }, master bool) (optim.Optimizer, error) {
	sgd := optim.SGDConfig{LR: 0.01, Momentum: 0.9, Nesterov: true, WeightDecay: 5e-4, MasterWeights: master}
	adam := optim.AdamConfig{MasterWeights: master}
	adamw := optim.AdamConfig{Beta2: 0.99, MasterWeights: master}
	if d, ok := sync.(*parallel.DDP); ok {
		switch c.Optimizer {
		case "sgd":
			return parallel.NewSGD(d, sgd)
		case "adam":
			return parallel.NewAdam(d, adam)
		case Adam8bitName:
			return parallel.NewAdamW8bit(d, adamw, optim.Quant8Config{})
		}
		return parallel.NewAdamW(d, adamw)
	}
	switch c.Optimizer {
	case "sgd":
		return optim.NewSGD(params, sgd)
	case "adam":
		return optim.NewAdam(params, adam)
	case Adam8bitName:
		return newAdamW8bit(params, adamw)
	}
	return optim.NewAdamW(params, adamw)
}

// batchLoss returns the forward of one micro-batch of zeros. The batch is
// made on the device like any other tensor (Scope.Zeros): on meta it has
// no host memory, so planning a batch of terabytes costs nothing.
func batchLoss(m Model, c Config, dev *device.Device, model nn.Module, micro int, pdt dtype.DType) func(*autograd.Scope, int) *autograd.Tensor {
	input := func(s *autograd.Scope, dt dtype.DType, shape ...int) *autograd.Tensor {
		defer s.Within("input")()
		return s.Zeros(dev, dt, shape...)
	}
	if m.Kind == "gpt" {
		loss := gptLoss(c, model)
		return func(s *autograd.Scope, _ int) *autograd.Tensor {
			return loss(input(s, dtype.I64, micro, c.Seq), input(s, dtype.I64, micro*c.Seq))
		}
	}
	r := model.(*nn.ResNet)
	return func(s *autograd.Scope, _ int) *autograd.Tensor {
		xs := input(s, dtype.F32, micro, m.Channels, c.Image, c.Image)
		if pdt != dtype.F32 {
			xs = xs.Cast(pdt)
		}
		return autograd.CrossEntropy(r.Forward(xs), input(s, dtype.I64, micro), autograd.CEOptions{})
	}
}
