package run

import (
	"fmt"
	"io"
	"math/rand/v2"
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
// capacity) and its own replica of the model; each step draws the global
// batch of --batch sequences, of which rank r trains on rows
// [r·batch/ranks, (r+1)·batch/ranks). Rank 0 prints the progress,
// evaluates and generates the sample (under --zero 3 every rank first
// gathers the whole model, DDP.Unshard); the report's peak_bytes are rank
// 0's training peaks, and extra.ranks lists every rank's (extra.host_ranks
// the hosts' with --offload).
func trainRanks(c *Config, out io.Writer, capacity int64, acDT dtype.DType, steps int, corpus, trainText, valText *data.Text) (*train.Report, error) {
	if err := c.CheckParallel(); err != nil {
		return nil, err
	}
	pdt, forwardDT := dtype.F32, acDT
	if c.AMPParams {
		pdt, forwardDT = acDT, dtype.Invalid
	}
	end := c.End(steps)
	per := c.Micro() // each rank's micro-batch: --batch over the ranks, then over --accum
	rep := &train.Report{Example: "transformer", Model: fmt.Sprintf("gpt-%dx%d", c.Layers, c.Width), Steps: end,
		EvalMetric: "validation_loss_nats_per_byte", CapacityBytes: capacity, Flags: c.Values()}
	var skipped int
	var trained device.Stats
	final := make([]float64, c.Ranks) // each rank's last loss, over its part of the batch
	began := time.Now()
	ranks, err := c.RunRanks(capacity, func(r *train.Rank) error {
		rank := r.Comm.Rank()
		runBlocks, ckptDesc, err := c.RunBlocks()
		if err != nil {
			return err
		}
		gen := autograd.NewGenerator(c.Seed + uint64(rank))
		var model *nn.GPT
		if err := autograd.Try(func() { model, err = nn.NewGPT(nn.NewBuilder(r.Dev, pdt, c.Seed), "gpt", c.GPT(), gen) }); err != nil {
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
		opt, err := parallel.NewAdamW(d, optim.AdamConfig{LR: c.LR, Beta2: 0.99, WeightDecay: c.WeightDecay, MasterWeights: c.AMPParams})
		if err != nil {
			return err
		}
		defer opt.Release()
		gradDT := dtype.F32
		if c.AMPParams {
			gradDT = pdt
		}
		st := &train.Stepper{
			Opt: opt, Scaler: amp.NewScaler(gradDT, amp.ScalerConfig{}), Autocast: forwardDT, Accum: c.Accum, Clip: c.Clip, Sync: d,
			Schedule: optim.CosineWarmup{Base: c.LR, Min: c.LR / 10, Warmup: min(100, steps/10), Total: steps},
		}
		var prog *train.Progress
		if rank == 0 {
			rep.Params = nn.Count(model)
			fmt.Fprintf(out, "transformer: GPT %d layers × width %d, %d heads, context %d (%d parameters, %s) on %d ranks cpu:0…cpu:%d, ZeRO stage %d%s, %d-byte corpus, global batch %d (%d per rank)×%d, %d steps",
				c.Layers, c.Width, c.Heads, c.Context, nn.Count(model), device.FormatBytes(nn.ParamBytes(model)), c.Ranks, c.Ranks-1, c.Zero,
				c.OffloadDesc(), corpus.Len(), c.Batch, per, c.Accum, steps)
			fmt.Fprintln(out, c.Describe(acDT, ckptDesc, capacity))
			if st.Scaler.Enabled() || acDT != dtype.Invalid {
				fmt.Fprintln(out, "amp:", st.Scaler.Note())
			}
			prog = train.NewProgress(out, end, "transformer")
		}
		rng := rand.New(rand.NewPCG(c.Seed, 7)) // the same global batches on every rank
		shape := []int{per, c.Context}
		loss, err := r.Steps(st, end, c.Batch, began, prog, func(s *autograd.Scope, _ int) *autograd.Tensor {
			x, y := trainText.Batch(rng, c.Batch/c.Accum, c.Context)
			lo, hi := rank*per*c.Context, (rank+1)*per*c.Context
			return lossOf(s, r.Dev, model, x[lo:hi], y[lo:hi], shape)
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
		trained = r.Dev.Stats()
		skipped = st.Scaler.Skipped()
		val, sample, err := evaluate(c, r.Dev, model, valText)
		if err != nil {
			return err
		}
		rep.Eval = val
		rep.Extra = map[string]any{"sample": sample}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if train.Follower(ranks) {
		return rep, nil // an mpirun rank other than 0: rank 0 reports
	}
	rep.Extra["corpus_bytes"] = corpus.Len()
	train.FinishRanks(out, rep, ranks, final, trained, end, c.Batch, skipped)
	fmt.Fprintf(out, "validation loss %.4f nats/byte (%d batches); final training loss %.4f; %.1f samples/s; %.0f s\n",
		rep.Eval, c.EvalBatches, rep.FinalLoss, rep.SamplesPerSec, rep.Seconds)
	if s := rep.Extra["sample"].(string); s != "" {
		fmt.Fprintf(out, "sample:\n%s\n", s)
	}
	if c.Report != "" {
		if err := rep.Write(c.Report); err != nil {
			return nil, err
		}
	}
	return rep, nil
}
