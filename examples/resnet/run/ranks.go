package run

import (
	"fmt"
	"io"
	"time"

	"github.com/headroom-ml/headroom/amp"
	"github.com/headroom-ml/headroom/autograd"
	"github.com/headroom-ml/headroom/data"
	"github.com/headroom-ml/headroom/device"
	"github.com/headroom-ml/headroom/dtype"
	"github.com/headroom-ml/headroom/nn"
	"github.com/headroom-ml/headroom/optim"
	"github.com/headroom-ml/headroom/parallel"
	"github.com/headroom-ml/headroom/train"
)

// trainRanks is Train with data parallelism (--ranks, --zero, --offload):
// each rank is a goroutine with its own device cpu:r (of --mem-limit's
// capacity), its own replica of the model and its own loader, which yields
// the same global batches of --batch images on every rank; rank r trains
// on images [r·batch/ranks, (r+1)·batch/ranks) of each. Batch-norm
// statistics are computed per rank and rank 0's are broadcast after each
// step. Rank 0 prints the progress and evaluates (under --zero 3 every
// rank first gathers the whole model, DDP.Unshard); the report's
// peak_bytes are rank 0's training peaks, and extra.ranks lists every
// rank's (extra.host_ranks the hosts' with --offload).
func trainRanks(c *Config, out io.Writer, capacity int64, acDT dtype.DType, trainSet, testSet *data.Images, ds dataset) (*train.Report, error) {
	if err := c.CheckParallel(); err != nil {
		return nil, err
	}
	pdt, forwardDT := dtype.F32, acDT
	if c.AMPParams {
		pdt, forwardDT = acDT, dtype.Invalid
	}
	per := c.Micro() // each rank's micro-batch: --batch over the ranks, then over --accum
	img := trainSet.C * trainSet.H * trainSet.W
	rep := &train.Report{Example: "resnet", Model: c.Model, EvalMetric: "test_accuracy", CapacityBytes: capacity, Flags: c.Values()}
	var trained device.Stats
	var skipped, end int
	final := make([]float64, c.Ranks) // each rank's last loss, over its part of the batch
	began := time.Now()
	ranks, err := c.RunRanks(capacity, func(r *train.Rank) error {
		rank := r.Comm.Rank()
		runBlocks, ckptDesc, err := c.RunBlocks()
		if err != nil {
			return err
		}
		loader, err := data.NewLoader(trainSet, data.LoaderConfig{
			Batch: c.Batch / c.Accum, Shuffle: true, Seed: c.Seed, DropLast: true, Mean: ds.mean, Std: ds.std, Crop: ds.crop, Flip: ds.flip,
		})
		if err != nil {
			return err
		}
		var model *nn.ResNet
		if err := autograd.Try(func() { model, err = buildModel(c, r.Dev, pdt, trainSet) }); err != nil {
			return err
		}
		if err != nil {
			return err
		}
		defer nn.Release(model)
		model.RunBlocks = runBlocks
		d, err := r.DDP(&c.Common, model)
		if err != nil {
			return err
		}
		defer d.Release()
		opt, err := parallel.NewSGD(d, optim.SGDConfig{
			LR: c.LR, Momentum: c.Momentum, Nesterov: c.Momentum > 0, WeightDecay: c.WeightDecay, MasterWeights: c.AMPParams,
		})
		if err != nil {
			return err
		}
		defer opt.Release()
		steps, err := c.TotalSteps(loader.Batches() / c.Accum)
		if err != nil {
			return err
		}
		last := c.End(steps)
		gradDT := dtype.F32
		if c.AMPParams {
			gradDT = pdt
		}
		st := &train.Stepper{
			Opt: opt, Scaler: amp.NewScaler(gradDT, amp.ScalerConfig{}), Autocast: forwardDT, Accum: c.Accum, Sync: d,
			Schedule: optim.CosineWarmup{Base: c.LR, Warmup: min(100, steps/20), Total: steps},
		}
		var prog *train.Progress
		if rank == 0 {
			end = last
			rep.Params, rep.Steps = nn.Count(model), last
			fmt.Fprintf(out, "resnet: %s (%d parameters, %s) on %s, %d ranks cpu:0…cpu:%d, ZeRO stage %d%s, global batch %d (%d per rank)×%d, %d steps",
				c.Model, nn.Count(model), device.FormatBytes(nn.ParamBytes(model)), ds.name, c.Ranks, c.Ranks-1, c.Zero, c.OffloadDesc(),
				c.Batch, per, c.Accum, steps)
			fmt.Fprintln(out, c.Describe(acDT, ckptDesc, capacity))
			if st.Scaler.Enabled() || acDT != dtype.Invalid {
				fmt.Fprintln(out, "amp:", st.Scaler.Note())
			}
			prog = train.NewProgress(out, last, "resnet")
		}
		shape := []int{per, trainSet.C, trainSet.H, trainSet.W}
		loss, err := r.Steps(st, last, c.Batch, began, prog, func(s *autograd.Scope, _ int) *autograd.Tensor {
			x, y := next(loader)
			xs := s.FromFloat32s(r.Dev, shape, x[rank*per*img:(rank+1)*per*img])
			if pdt != dtype.F32 {
				xs = xs.Cast(pdt)
			}
			logits := model.Forward(xs)
			return autograd.CrossEntropy(logits, s.FromInt64s(r.Dev, []int{per}, y[rank*per:(rank+1)*per]), autograd.CEOptions{})
		})
		if err != nil {
			return err
		}
		final[rank] = loss
		r.Trained()
		if err := d.Unshard(); err != nil { // stage 3: every rank gathers the model for rank 0's evaluation
			return err
		}
		if rank != 0 {
			return nil
		}
		prog.Done()
		rep.Seconds = time.Since(began).Seconds()
		trained, skipped = r.Dev.Stats(), st.Scaler.Skipped()
		rep.Eval, err = evaluate(c, r.Dev, model, testSet, ds, pdt)
		return err
	})
	if err != nil {
		return nil, err
	}
	if train.Follower(ranks) {
		return rep, nil // an mpirun rank other than 0: rank 0 reports
	}
	rep.Extra = map[string]any{"dataset": ds.name}
	train.FinishRanks(out, rep, ranks, final, trained, end, c.Batch, skipped)
	fmt.Fprintf(out, "test accuracy %.2f%% on %d images; final loss %.4f; %.1f samples/s; %.0f s\n",
		100*rep.Eval, evalCount(c, testSet), rep.FinalLoss, rep.SamplesPerSec, rep.Seconds)
	if c.Report != "" {
		if err := rep.Write(c.Report); err != nil {
			return nil, err
		}
	}
	return rep, nil
}
