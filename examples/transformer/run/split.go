package run

import (
	"fmt"
	"io"
	"math/rand/v2"
	"time"

	"github.com/headroom-ml/headroom/autograd"
	"github.com/headroom-ml/headroom/data"
	"github.com/headroom-ml/headroom/device"
	"github.com/headroom-ml/headroom/nn"
	"github.com/headroom-ml/headroom/optim"
	"github.com/headroom-ml/headroom/parallel"
	"github.com/headroom-ml/headroom/train"
)

// checkSplit checks the model against --tp and --pp: the heads and the
// vocabulary (256) divide by --tp, the layers are at least --pp, the
// embeddings are untied under --pp (untied by default there; an explicit
// --tie-embeddings=true is refused: the token table is stage 0's, the
// head the last stage's), no shared layers, and under
// --sequence-parallel each micro-batch's tokens divide by --tp.
func (c *Config) checkSplit() error {
	if !c.Split() {
		return nil
	}
	if c.PP > 1 && !c.Set("tie-embeddings") {
		c.Tie = false // a pipeline cannot tie: untie unless the user asked to tie
	}
	tokens := c.Batch / max(c.Accum, 1) / c.Shape().Data * c.Context
	return train.First(
		train.Want(c.Heads%c.TP == 0, "heads", c.Heads, fmt.Sprintf("a number of heads divisible by --tp %d", c.TP)),
		train.Want(256%c.TP == 0, "tp", c.TP, "a divisor of the vocabulary, 256 bytes"),
		train.Want(c.Layers >= c.PP, "pp", c.PP, fmt.Sprintf("at most --layers %d stages", c.Layers)),
		train.Want(c.PP < 2 || !c.Tie, "tie-embeddings", c.Tie, fmt.Sprintf("false with --pp %d (the token embedding is stage 0's, the LM head the last stage's: one weight cannot be both)", c.PP)),
		train.Want(!c.Share, "share-layers", c.Share, "false with --tp or --pp (one block's weights cannot be split or staged): not available yet"),
		train.Want(!c.SequenceParallel || tokens%c.TP == 0, "batch", c.Batch, fmt.Sprintf("micro-batches whose tokens (batch/accum × context = %d) divide by --tp %d under --sequence-parallel", tokens, c.TP)),
	)
}

// composed reports whether the run composes parallelisms (train.SplitConfig.Composed).
func (c *Config) composed() bool { return c.Shape().Data > 1 || c.TP > 1 && c.PP > 1 }

// meshFlags names the layout's flags ("--tp 2 --pp 2 --ranks 8").
func (c *Config) meshFlags() string {
	return fmt.Sprintf("--tp %d --pp %d --ranks %d", c.TP, c.PP, c.Shape().Size())
}

// trainSplit trains with --tp or --pp: c.Ranks ranks in a mesh
// (train.RunMesh), each with its part of the model (train.SplitGPT),
// every rank drawing the same batches as the one-device run, whose
// --accum is the data-parallel copies × --accum (copy d trains on
// micro-batches d·accum … d·accum+accum−1 of each step). Validation and sampling need the
// whole model and are not run; the report's final loss is the step's
// mean loss, peak_bytes rank 0's and extra.ranks every rank's.
func trainSplit(c *Config, out io.Writer, desc string, text *data.Text, steps int, sched optim.Schedule) (*train.Report, error) {
	capacity, err := c.Capacity()
	if err != nil {
		return nil, err
	}
	param, forward, grad, err := c.Precision()
	if err != nil {
		return nil, err
	}
	run, _, err := c.RunBlocks()
	if err != nil {
		return nil, err
	}
	schedule, _ := c.Schedule()
	dp := c.Shape().Data
	micro := c.Batch / dp / c.Accum
	sc := train.SplitConfig{TP: c.TP, PP: c.PP, DP: dp, Zero: c.Zero, Sequence: c.SequenceParallel, Schedule: schedule, Micro: c.Accum,
		Batch: micro, Seq: c.Context, Clip: c.Clip, Autocast: forward, Grad: grad, GradF32: c.GradF32, LR: sched}
	rep := &train.Report{Example: "transformer", Model: fmt.Sprintf("gpt-%dx%d", c.Layers, c.Width), Steps: c.End(steps),
		CapacityBytes: capacity, Flags: c.Values()} // no EvalMetric: validation needs the whole model, not run
	final := make([]float64, c.Ranks)
	var stats device.Stats // rank 0's after training
	began := time.Now()
	ranks, err := c.RunMesh(capacity, func(rk *train.Rank, mesh *parallel.Mesh) error {
		b := nn.NewBuilder(rk.Dev, param, c.Seed)
		if c.PP > 1 { // each stage stores its own blocks only
			b = nn.NewDeferredBuilder(rk.Dev, param, c.Seed)
		}
		st := splitState{src: rand.NewPCG(c.Seed, 7), gen: autograd.NewGenerator(c.Seed)} // the one-device run's sampler
		g, err := train.NewSplitGPT(mesh, b, "gpt", c.GPT(), st.gen, sc, func(ps []nn.Param, d *parallel.DDP) (optim.Optimizer, error) {
			return c.newOptimizer(ps, d, c.AMPParams)
		})
		if err != nil {
			return err
		}
		defer g.Release()
		g.SetRunBlocks(run)
		w := io.Discard
		if rk.Comm.Rank() == 0 {
			w = out
			rep.Params = nn.Count(g) // rank 0's part
			fmt.Fprintf(out, "transformer: GPT %d layers × width %d, %d heads, context %d on %s, %s, batch %d×%d, %d steps%s\n",
				c.Layers, c.Width, c.Heads, c.Context, c.SplitDesc(rk), desc, micro, c.Accum, steps, c.Describe())
			fmt.Fprintln(out, c.layout(g))
		}
		rng := rand.New(st.src)
		start, loss, err := c.resumeSplit(g, mesh, st, w, steps)
		if err != nil {
			return err
		}
		final[rk.Comm.Rank()] = loss
		prog := train.NewProgress(w, start, rep.Steps, "transformer")
		for i := start; i < rep.Steps; i++ {
			xs, ys := make([][]int64, dp*c.Accum), make([][]int64, dp*c.Accum)
			for m := range xs {
				xs[m], ys[m] = text.Batch(rng, micro, c.Context)
			}
			xs, ys = xs[mesh.DataRank*c.Accum:], ys[mesh.DataRank*c.Accum:]
			loss, err := g.Step(
				func(s *autograd.Scope, m int) *autograd.Tensor {
					return s.FromInt64s(rk.Dev, []int{micro, c.Context}, xs[m])
				},
				func(s *autograd.Scope, m int) *autograd.Tensor { return s.FromInt64s(rk.Dev, []int{len(ys[m])}, ys[m]) })
			if err != nil {
				return err
			}
			final[rk.Comm.Rank()] = loss
			prog.Step(i, loss, float64((i+1)*c.Batch)/time.Since(began).Seconds(), rk.Dev)
		}
		prog.Done()
		if err := c.saveSplit(g, mesh, st, final[rk.Comm.Rank()]); err != nil {
			return err
		}
		rk.Trained()
		if rk.Comm.Rank() == 0 {
			stats = rk.Dev.Stats()
		}
		// Every rank's loss is its copy's micro-batches': the mean over the
		// data group is the batch's (over MPI this process holds one rank).
		sum, err := parallel.AllSumFloat64(mesh.Data, rk.Dev, final[rk.Comm.Rank()])
		final[rk.Comm.Rank()] = sum / float64(dp)
		return err
	})
	if err != nil {
		return nil, err
	}
	if train.Follower(ranks) {
		return rep, nil // an mpirun rank other than 0: rank 0 reports
	}
	rep.Seconds = time.Since(began).Seconds()
	train.FinishRanks(out, rep, ranks, final, stats, rep.Steps, c.Batch, 0)
	rep.FinalLoss = final[0]
	fmt.Fprintf(out, "final training loss %.4f; %.1f samples/s; %.0f s (validation and sampling need the whole model: not run with %s)\n",
		rep.FinalLoss, rep.SamplesPerSec, rep.Seconds, c.meshFlags())
	if c.Report == "" {
		return rep, nil
	}
	return rep, rep.Write(c.Report)
}

// layout says how rank 0's part of the model is cut, for the header.
func (c *Config) layout(g *train.SplitGPT) string {
	if g.Pipe == nil {
		return fmt.Sprintf("layout: tensor parallel %d: each rank %d of %d heads, %d of %d MLP features, %d of 256 vocabulary rows; %d parameters on rank 0",
			c.TP, c.Heads/c.TP, c.Heads, 4*c.Width/c.TP, 4*c.Width, 256/c.TP, nn.Count(g.TP))
	}
	if g.Pipe != nil && g.TP != nil || c.composed() {
		return fmt.Sprintf("layout: mesh %v, world rank = tp + %d·(dp + %d·pp); pipeline stages of blocks %v; %d parameters on rank 0", c.Shape(), c.TP, c.Shape().Data,
			parallel.DefaultSplit(c.Layers, c.PP), nn.Count(g))
	}
	return fmt.Sprintf("layout: pipeline %d stages, blocks per stage %v, %s schedule, %d micro-batches, bubble %.3f", c.PP, parallel.DefaultSplit(c.Layers, c.PP), c.PipeSchedule, c.Accum, parallel.Bubble(c.PP, c.Accum))
}
