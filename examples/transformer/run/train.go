package run

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"time"

	"github.com/headroom-ml/headroom/amp"
	"github.com/headroom-ml/headroom/autograd"
	"github.com/headroom-ml/headroom/data"
	"github.com/headroom-ml/headroom/device"
	"github.com/headroom-ml/headroom/device/cpu"
	"github.com/headroom-ml/headroom/dtype"
	"github.com/headroom-ml/headroom/nn"
	"github.com/headroom-ml/headroom/optim"
	"github.com/headroom-ml/headroom/quant"
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
	return train.ExitCode(stderr, "transformer", err)
}

// extra is the example's own part of a snapshot: the batch sampler's
// random state.
type extra struct {
	RNG []byte `json:"rng"`
}

// Train runs the configured training and evaluation, prints progress, the
// memory summary, the validation loss and a generated sample to out,
// writes the report and snapshot the flags ask for, and returns the
// report.
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
	corpus, err := data.LoadText(c.Data)
	if err != nil {
		return nil, err
	}
	trainText, valText := corpus.SplitSpread(c.ValFraction, valChunk)
	if trainText.Len() <= c.Context || valText.Len() <= c.Context {
		return nil, fmt.Errorf("corpus of %d bytes is too small for context %d", corpus.Len(), c.Context)
	}
	// An epoch is as many windows as the training text holds, in steps of --batch.
	steps, err := c.TotalSteps(trainText.Len() / (c.Batch * c.Context))
	if err != nil {
		return nil, err
	}
	if c.Parallel() {
		return trainRanks(c, out, capacity, acDT, steps, corpus, trainText, valText)
	}
	dev := cpu.New(0, device.Options{Capacity: capacity})
	defer train.Close(dev, &err)
	pdt, forwardDT := dtype.F32, acDT
	if c.AMPParams {
		pdt, forwardDT = acDT, dtype.Invalid
	}
	gen := autograd.NewGenerator(c.Seed)
	var model *nn.GPT
	if err := autograd.Try(func() { model, err = nn.NewGPT(nn.NewBuilder(dev, pdt, c.Seed), "gpt", c.GPT(), gen) }); err != nil {
		return nil, err
	}
	if err != nil { // NewGPT's own error (the closure set the outer err)
		return nil, err
	}
	defer nn.Release(model)
	model.RunBlocks = runBlocks
	opt, err := optim.NewAdamW(model.Params(), optim.AdamConfig{LR: c.LR, Beta2: 0.99, WeightDecay: c.WeightDecay, MasterWeights: c.AMPParams})
	if err != nil {
		return nil, err
	}
	defer opt.Release()
	gradDT := dtype.F32
	if c.AMPParams {
		gradDT = pdt
	}
	st := &train.Stepper{
		Opt: opt, Scaler: amp.NewScaler(gradDT, amp.ScalerConfig{}), Autocast: forwardDT, Accum: c.Accum, Clip: c.Clip,
		Schedule: optim.CosineWarmup{Base: c.LR, Min: c.LR / 10, Warmup: min(100, steps/10), Total: steps},
	}
	src := rand.NewPCG(c.Seed, 7)
	rng := rand.New(src)
	start := 0
	var loss float64 // the last step's; a resumed run starts from the snapshot's
	if c.Resume != "" {
		snap, err := train.LoadSnapshot(c.Resume, model, opt)
		if err != nil {
			return nil, err
		}
		var ex extra
		if err := json.Unmarshal(snap.Extra, &ex); err != nil {
			return nil, fmt.Errorf("resume from %s: %w", c.Resume, err)
		}
		if err := src.UnmarshalBinary(ex.RNG); err != nil {
			return nil, fmt.Errorf("resume from %s: sampler state: %w", c.Resume, err)
		}
		if g, ok := snap.Generators["dropout"]; ok {
			gen.SetState(g)
		}
		if snap.Scaler != nil {
			if err := st.Scaler.Load(*snap.Scaler); err != nil {
				return nil, err
			}
		}
		st.SetSteps(snap.Step)
		start, loss = snap.Step, snap.Loss
	}

	fmt.Fprintf(out, "transformer: GPT %d layers × width %d, %d heads, context %d (%d parameters, %s) on %s, %d-byte corpus, batch %d×%d, %d steps",
		c.Layers, c.Width, c.Heads, c.Context, nn.Count(model), device.FormatBytes(nn.ParamBytes(model)), dev, corpus.Len(), c.Batch/c.Accum, c.Accum, steps)
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
	prog := train.NewProgress(out, end-start, "transformer")
	began := time.Now()
	shape := []int{c.Micro(), c.Context}
	for i := start; i < end; i++ {
		if mon != nil {
			mon.Begin(dev)
		}
		loss, _, err = st.Step(func(s *autograd.Scope, _ int) *autograd.Tensor {
			x, y := trainText.Batch(rng, c.Micro(), c.Context)
			return lossOf(s, dev, model, x, y, shape)
		})
		if err == nil && mon != nil {
			err = mon.End(i)
		}
		if err != nil {
			prog.Done()
			if train.Alerted(err) {
				return nil, c.StopOnAlert(err, "transformer", func(path string) error {
					rs, _ := src.MarshalBinary()
					ex, _ := json.Marshal(extra{RNG: rs})
					return train.SaveSnapshot(path, model, opt, train.Snapshot{Step: i + 1, Loss: loss, Extra: ex,
						Generators: map[string]autograd.GeneratorState{"dropout": gen.State()}})
				})
			}
			return nil, fmt.Errorf("step %d: %w", i, err)
		}
		prog.Step(i-start, loss, float64((i+1-start)*c.Batch)/time.Since(began).Seconds(), dev)
	}
	prog.Done()
	seconds := time.Since(began).Seconds()
	trained := dev.Stats()
	var evalModel nn.Layer = model
	var qrec map[string]any
	if c.Quantize != "" {
		valFloat, _, err := evaluate(c, dev, model, valText)
		if err != nil {
			return nil, err
		}
		q, err := quant.ConvertGPT(model, quant.Config{}, nil)
		if err != nil {
			return nil, err
		}
		defer nn.Release(q)
		opt.Release()
		nn.Release(model) // the float model is gone: the INT8 model is evaluated alone
		dev.ResetPeak()
		evalModel = q
		qrec = map[string]any{"mode": "dynamic", "validation_loss_float": valFloat,
			"parameter_bytes_float": nn.ParamBytes(model), "parameter_bytes_int8": nn.ParamBytes(q)}
		fmt.Fprintf(out, "int8: parameters %s → %s; validation loss in float %.4f\n",
			device.FormatBytes(nn.ParamBytes(model)), device.FormatBytes(nn.ParamBytes(q)), valFloat)
	}
	val, sample, err := evaluate(c, dev, evalModel, valText)
	if err != nil {
		return nil, err
	}
	if qrec != nil {
		trained = dev.Stats() // the INT8 model's peaks
	}
	fmt.Fprint(out, trained.Summary())
	fmt.Fprintf(out, "validation loss %.4f nats/byte (%d batches); final training loss %.4f; %.1f samples/s; %.0f s\n",
		val, c.EvalBatches, loss, float64((end-start)*c.Batch)/seconds, seconds)
	if sample != "" {
		fmt.Fprintf(out, "sample:\n%s\n", sample)
	}
	rep := &train.Report{
		Example: "transformer", Model: fmt.Sprintf("gpt-%dx%d", c.Layers, c.Width), Params: nn.Count(model), Steps: end,
		FinalLoss: loss, Eval: val, EvalMetric: "validation_loss_nats_per_byte",
		SamplesPerSec: float64((end-start)*c.Batch) / seconds, Seconds: seconds,
		PeakBytes: train.Peaks(trained), CapacityBytes: capacity, Flags: c.Values(), Stats: trained,
		Extra: map[string]any{"sample": sample, "corpus_bytes": corpus.Len(), "skipped_steps": st.Scaler.Skipped()},
	}
	if qrec != nil {
		rep.Extra["quantize"] = qrec
	}
	if c.Report != "" {
		if err := rep.Write(c.Report); err != nil {
			return nil, err
		}
	}
	if c.Save != "" {
		rs, _ := src.MarshalBinary()
		ex, _ := json.Marshal(extra{RNG: rs})
		snap := train.Snapshot{Step: end, Loss: loss, Extra: ex, Generators: map[string]autograd.GeneratorState{"dropout": gen.State()}}
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

// lossOf returns the mean cross-entropy of the model's next-byte
// predictions for a batch.
func lossOf(s *autograd.Scope, dev *device.Device, m nn.Layer, x, y []int64, shape []int) *autograd.Tensor {
	logits := m.Forward(s.FromInt64s(dev, shape, x))
	flat := logits.Reshape(-1, 256)
	logits.Release()
	return autograd.CrossEntropy(flat, s.FromInt64s(dev, []int{len(y)}, y), autograd.CEOptions{})
}
