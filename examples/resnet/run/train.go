package run

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"time"

	"github.com/headroom-ml/headroom/amp"
	"github.com/headroom-ml/headroom/autograd"
	"github.com/headroom-ml/headroom/data"
	"github.com/headroom-ml/headroom/device"
	"github.com/headroom-ml/headroom/device/cpu"
	"github.com/headroom-ml/headroom/dtype"
	"github.com/headroom-ml/headroom/nn"
	"github.com/headroom-ml/headroom/optim"
	"github.com/headroom-ml/headroom/train"
)

// Main runs the example with command-line arguments and returns the exit
// status: 0 on success, 1 on an error, 2 when memory ran out (with the
// out-of-memory explanation on stderr, never a panic trace).
func Main(args []string, stdout, stderr io.Writer) int {
	c, err := Parse(args, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err == nil {
		_, err = Train(c, stdout)
	}
	return train.ExitCode(stderr, "resnet", err)
}

// Train runs the configured training and evaluation, prints progress, the
// memory summary and the result to out, writes the report and snapshot
// the flags ask for, and returns the report.
func Train(c *Config, out io.Writer) (_ *train.Report, err error) {
	capacity, err := c.Capacity()
	if err != nil {
		return nil, err
	}
	acDT, err := c.AMPDType()
	if err != nil {
		return nil, err
	}
	runBlocks, ckptDesc, err := c.RunBlocks()
	if err != nil {
		return nil, err
	}
	trainSet, testSet, ds, err := loadData(c)
	if err != nil {
		return nil, err
	}
	if c.Parallel() {
		return trainRanks(c, out, capacity, acDT, trainSet, testSet, ds)
	}
	loader, err := data.NewLoader(trainSet, data.LoaderConfig{
		Batch: c.Micro(), Shuffle: true, Seed: c.Seed, DropLast: true, Mean: ds.mean, Std: ds.std, Crop: ds.crop, Flip: ds.flip,
	})
	if err != nil {
		return nil, err
	}
	dev := cpu.New(0, device.Options{Capacity: capacity})
	defer train.Close(dev, &err)

	// Parameters are F32, or the --amp dtype with F32 master weights.
	pdt, forwardDT := dtype.F32, acDT
	if c.AMPParams {
		pdt, forwardDT = acDT, dtype.Invalid
	}
	var model *nn.ResNet
	if err := autograd.Try(func() { model, err = buildModel(c, dev, pdt, trainSet) }); err != nil {
		return nil, err
	}
	if err != nil { // buildModel's own error (the closure set the outer err)
		return nil, err
	}
	defer nn.Release(model)
	model.RunBlocks = runBlocks
	opt, err := optim.NewSGD(model.Params(), optim.SGDConfig{
		LR: c.LR, Momentum: c.Momentum, Nesterov: c.Momentum > 0, WeightDecay: c.WeightDecay, MasterWeights: c.AMPParams,
	})
	if err != nil {
		return nil, err
	}
	defer func() { opt.Release() }() // pruning replaces opt

	perEpoch := loader.Batches() / c.Accum
	steps, err := c.TotalSteps(perEpoch)
	if err != nil {
		return nil, err
	}
	gradDT := dtype.F32
	if c.AMPParams {
		gradDT = pdt
	}
	st := &train.Stepper{
		Opt: opt, Scaler: amp.NewScaler(gradDT, amp.ScalerConfig{}), Autocast: forwardDT, Accum: c.Accum,
		Schedule: optim.CosineWarmup{Base: c.LR, Warmup: min(100, steps/20), Total: steps},
	}
	start := 0
	var loss float64 // the last step's; a resumed run starts from the snapshot's
	if c.Resume != "" {
		if start, loss, err = resume(c.Resume, model, opt, st, loader); err != nil {
			return nil, err
		}
	}

	fmt.Fprintf(out, "resnet: %s (%d parameters, %s) on %s, %s, batch %d×%d, %d steps",
		c.Model, nn.Count(model), device.FormatBytes(nn.ParamBytes(model)), ds.name, dev, c.Batch/c.Accum, c.Accum, steps)
	fmt.Fprintln(out, c.Describe(acDT, ckptDesc, capacity))
	if st.Scaler.Enabled() || acDT != dtype.Invalid {
		fmt.Fprintln(out, "amp:", st.Scaler.Note())
	}

	end := c.End(steps)
	mon, closeLog, err := c.Watch()
	if err != nil {
		return nil, err
	}
	defer closeLog()
	prog := train.NewProgress(out, end-start, "resnet")
	began := time.Now()
	batchShape := []int{c.Micro(), trainSet.C, trainSet.H, trainSet.W}
	step := func(s *autograd.Scope, _ int) *autograd.Tensor {
		x, y := next(loader)
		xs := s.FromFloat32s(dev, batchShape, x)
		if pdt != dtype.F32 {
			xs = xs.Cast(pdt)
		}
		logits := model.Forward(xs)
		return autograd.CrossEntropy(logits, s.FromInt64s(dev, []int{c.Micro()}, y), autograd.CEOptions{})
	}
	for i := start; i < end; i++ {
		if mon != nil {
			mon.Begin(dev)
		}
		loss, _, err = st.Step(step)
		if err == nil && mon != nil {
			err = mon.End(i)
		}
		if err != nil {
			prog.Done()
			if train.Alerted(err) {
				return nil, c.StopOnAlert(err, "resnet", func(path string) error {
					ls, _ := json.Marshal(loader.State())
					return train.SaveSnapshot(path, model, opt, train.Snapshot{Step: i + 1, Loss: loss, Extra: ls})
				})
			}
			return nil, fmt.Errorf("step %d: %w", i, err)
		}
		done := i + 1 - start
		prog.Step(i-start, loss, float64(done*c.Batch)/time.Since(began).Seconds(), dev)
	}
	prog.Done()
	seconds := time.Since(began).Seconds()
	extra := map[string]any{"dataset": ds.name, "skipped_steps": st.Scaler.Skipped()}
	if c.Prune > 0 {
		pr, err := pruneAndFineTune(c, out, dev, model, &opt, st, step, testSet, ds, pdt)
		if err != nil {
			return nil, err
		}
		loss = pr.loss
		extra["prune"] = pr
	}
	var acc float64
	var trained device.Stats
	if c.Quantize != "" {
		q, err := quantizeAndEvaluate(c, out, dev, model, opt, loader, testSet, ds, pdt)
		if err != nil {
			return nil, err
		}
		acc, trained, extra["quantize"] = q.Accuracy, dev.Stats(), q // the INT8 model's peaks
	} else {
		trained = dev.Stats() // the training's peaks (after pruning: the fine-tune's), before evaluation
		if acc, err = evaluate(c, dev, model, testSet, ds, pdt); err != nil {
			return nil, err
		}
	}
	fmt.Fprint(out, trained.Summary())
	fmt.Fprintf(out, "test accuracy %.2f%% on %d images; final loss %.4f; %.1f samples/s; %.0f s\n",
		100*acc, evalCount(c, testSet), loss, float64((end-start)*c.Batch)/seconds, seconds)

	rep := &train.Report{
		Example: "resnet", Model: c.Model, Params: nn.Count(model), Steps: end, FinalLoss: loss,
		Eval: acc, EvalMetric: "test_accuracy", SamplesPerSec: float64((end-start)*c.Batch) / seconds,
		Seconds: seconds, PeakBytes: train.Peaks(trained), CapacityBytes: capacity, Flags: c.Values(), Stats: trained,
		Extra: extra,
	}
	if c.Report != "" {
		if err := rep.Write(c.Report); err != nil {
			return nil, err
		}
	}
	if c.Save != "" {
		ls, _ := json.Marshal(loader.State())
		snap := train.Snapshot{Step: end, Loss: loss, Extra: ls}
		if s := st.Scaler.State(); st.Scaler.Enabled() {
			snap.Scaler = &s
		}
		if err := train.SaveSnapshot(c.Save, model, opt, snap); err != nil {
			return nil, err
		}
		fmt.Fprintln(out, "saved", c.Save)
	}
	return rep, nil
}

// next returns the next batch, starting a new epoch when one ends.
func next(l *data.Loader) ([]float32, []int64) {
	x, y, ok := l.Next()
	if !ok {
		x, y, _ = l.Next()
	}
	return x, y
}

// resume restores a snapshot and returns the step to continue from and
// the loss of the step before it.
func resume(path string, m *nn.ResNet, o optim.Optimizer, st *train.Stepper, l *data.Loader) (int, float64, error) {
	snap, err := train.LoadSnapshot(path, m, o)
	if err != nil {
		return 0, 0, err
	}
	var ls data.LoaderState
	if err := json.Unmarshal(snap.Extra, &ls); err != nil {
		return 0, 0, fmt.Errorf("resume from %s: loader state: %w", path, err)
	}
	if err := l.SetState(ls); err != nil {
		return 0, 0, fmt.Errorf("resume from %s: %w", path, err)
	}
	if snap.Scaler != nil {
		if err := st.Scaler.Load(*snap.Scaler); err != nil {
			return 0, 0, err
		}
	}
	st.SetSteps(snap.Step)
	return snap.Step, snap.Loss, nil
}
