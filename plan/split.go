package plan

import (
	"fmt"
	"strings"
	"time"

	"github.com/headroom-ml/headroom/amp"
	"github.com/headroom-ml/headroom/autograd"
	"github.com/headroom-ml/headroom/checkpoint"
	"github.com/headroom-ml/headroom/device"
	"github.com/headroom-ml/headroom/device/meta"
	"github.com/headroom-ml/headroom/dtype"
	"github.com/headroom-ml/headroom/nn"
	"github.com/headroom-ml/headroom/optim"
	"github.com/headroom-ml/headroom/parallel"
	"github.com/headroom-ml/headroom/train"
)

// split reports whether c splits the model over ranks (TP or PP above 1).
func (c Config) split() bool { return c.TP > 1 || c.PP > 1 }

// world returns the ranks of c's step: Ranks × TP × PP.
func (c Config) world() int { return c.Ranks * max(c.TP, 1) * max(c.PP, 1) }

// checkSplit checks TP, PP, Sequence and Schedule against the model and
// refuses the combinations that are not available yet.
func (c Config) checkSplit(m Model) error {
	g := m.GPT
	switch {
	case c.TP < 1 || c.PP < 1:
		return fmt.Errorf("tp %d, pp %d: want each ≥ 1", c.TP, c.PP)
	case c.Schedule != "1f1b" && c.Schedule != "gpipe":
		return fmt.Errorf("pipeline schedule %q: want 1f1b or gpipe", c.Schedule)
	case c.Sequence && c.TP < 2:
		return fmt.Errorf("sequence parallelism needs tp ≥ 2")
	case !c.split():
		return nil
	case m.Kind != "gpt":
		return fmt.Errorf("tp %d, pp %d for %s: tensor and pipeline parallelism split a GPT: want a GPT model", c.TP, c.PP, m.Name)
	case c.Zero > 2 || c.Zero > 0 && c.Ranks < 2:
		return fmt.Errorf("ZeRO stage %d with tp %d, pp %d over dp %d: want stage 1 or 2 over dp ≥ 2 (stage 3 is not available yet)", c.Zero, c.TP, c.PP, c.Ranks)
	case c.Offload || c.OffloadActivations || c.Prune > 0:
		return fmt.Errorf("offload, activation offload and prune with tp %d, pp %d: not available yet", c.TP, c.PP)
	case c.composed() && (c.CheckpointBudget != 0 || c.Selective):
		return fmt.Errorf("a checkpoint budget or selective recomputation with pp %d or dp %d: not available yet (checkpoint segments work)", c.PP, c.Ranks)
	case g.Heads%c.TP != 0:
		return fmt.Errorf("tp %d for %s: its %d heads must divide by tp", c.TP, m.Name, g.Heads)
	case g.Layers < c.PP:
		return fmt.Errorf("pp %d for %s: more stages than its %d layers", c.PP, m.Name, g.Layers)
	case c.Sequence && (c.Batch/c.Ranks/c.Accum*c.Seq)%c.TP != 0:
		return fmt.Errorf("sequence parallelism: a micro-batch's %d tokens do not divide by tp %d", c.Batch/c.Ranks/c.Accum*c.Seq, c.TP)
	}
	return nil
}

// splitGPT returns the configuration c's ranks split: under PP untied
// (the last stage holds its own LM head); under TP with the vocabulary
// padded, when T does not divide it, to the next multiple of 128·T, as
// Megatron-LM pads it (--make-vocab-size-divisible-by 128): 50257 →
// 50304 for TP 1…3 rounding, 51200 for TP 8.
func splitGPT(c Config, m Model) nn.GPTConfig {
	cfg := m.GPT
	cfg.TieEmbeddings = cfg.TieEmbeddings && c.PP < 2
	if c.TP > 1 && cfg.Vocab%c.TP != 0 {
		q := 128 * c.TP
		cfg.Vocab = (cfg.Vocab + q - 1) / q * q
	}
	return cfg
}

// wholeParams counts the parameters of the model c splits (untied under
// PP), built deferred on a meta device of its own: shapes, no storage.
func wholeParams(c Config, m Model) (int64, error) {
	dev := meta.New(999, device.Options{Capacity: MaxBytes})
	g, err := nn.NewGPT(nn.NewDeferredBuilder(dev, dtype.F32, 1), "gpt", splitGPT(c, m), nil)
	if err != nil {
		return 0, err
	}
	n := nn.Count(g)
	nn.Release(g)
	return n, dev.Close()
}

// composed reports whether c composes parallelisms: PP above 1 or data
// parallelism with TP (the mesh path of train.SplitGPT).
func (c Config) composed() bool { return c.split() && (c.PP > 1 || c.Ranks > 1) }

// shape is c's rank mesh.
func (c Config) shape() parallel.MeshShape {
	return parallel.MeshShape{Data: c.Ranks, Tensor: max(c.TP, 1), Pipe: max(c.PP, 1)}
}

// layout names world rank r's place in the mesh ("dp 0/8 tp 1/2 stage
// 3/16", the parts that are split; "" without model parallelism).
func (c Config) layout(r int) string {
	if !c.split() {
		return ""
	}
	dp, tp, pp := c.shape().Coords(r)
	var parts []string
	if c.Ranks > 1 {
		parts = append(parts, fmt.Sprintf("dp %d/%d", dp, c.Ranks))
	}
	if c.TP > 1 {
		parts = append(parts, fmt.Sprintf("tp %d/%d", tp, c.TP))
	}
	if c.PP > 1 {
		parts = append(parts, fmt.Sprintf("stage %d/%d", pp, c.PP))
	}
	return strings.Join(parts, " ")
}

// representatives reports whether a prediction of c runs one
// representative rank per (tp, pp) coordinate — the data-parallel copy
// 0 — for all DP copies: on meta devices with DP > 1. The copies are
// symmetric: the same shapes, the same shard sizes (ZeRO pads the shards
// to equal length), the same order of allocations; the in-process
// collectives allocate no device memory, so the representative's Data
// communicator is a stand-in that moves nothing (dataStandIn), and its
// bytes are every copy's (TestRepresentativesEqualFullMesh).
func (c Config) representatives() bool { return c.split() && c.Ranks > 1 && !c.measure && !c.full }

// representative returns the world rank whose device stands for world
// rank r: r itself, or (0, tp, pp) with representatives.
func (c Config) representative(r int) int {
	if !c.representatives() {
		return r
	}
	_, tp, pp := c.shape().Coords(r)
	return c.shape().Rank(0, tp, pp)
}

// dataStandIn is a representative rank's data-parallel communicator: of
// Size copies, rank 0, every collective a no-op (on meta devices there
// are no values to move).
type dataStandIn struct{ size int }

func (d dataStandIn) Rank() int                                                { return 0 }
func (d dataStandIn) Size() int                                                { return d.size }
func (d dataStandIn) AllReduce(*autograd.Tensor, parallel.Op) error            { return nil }
func (d dataStandIn) ReduceScatter(_, _ *autograd.Tensor, _ parallel.Op) error { return nil }
func (d dataStandIn) AllGather(_, _ *autograd.Tensor) error                    { return nil }
func (d dataStandIn) Broadcast(*autograd.Tensor, int) error                    { return nil }
func (d dataStandIn) Barrier() error                                           { return nil }
func (d dataStandIn) Abort(error)                                              {}

// runMesh runs the ranks of c's mesh (splitStep; with representatives
// only the data-parallel copy 0's) on their devices of ds, each its own
// goroutine, into res by world rank.
func runMesh(c Config, m Model, ds *devices, res []result) error {
	shape := c.shape()
	if c.representatives() {
		shape.Data = 1
	}
	meshes, err := parallel.NewMeshGroup(shape)
	if err != nil {
		return err
	}
	return parallel.RunMesh(meshes, func(mesh *parallel.Mesh) error {
		r := mesh.World.Rank()
		if c.representatives() {
			r = c.shape().Rank(0, mesh.TensorRank, mesh.PipeRank)
			mesh.Shape, mesh.Data = c.shape(), dataStandIn{size: c.Ranks}
		}
		if err := ds.open(r); err != nil {
			return err
		}
		var err error
		res[r], err = splitStep(c, m, ds.dev[r], mesh, r == 0 && c.Timeline)
		return err
	})
}

// splitStep builds mesh rank m's part of the GPT on dev and runs c.Steps
// steps on zeros, as the transformer example's --tp and --pp do
// (train.SplitGPT): the same flags, clip 1 as the GPT plans' Stepper.
func splitStep(c Config, m Model, dev *device.Device, mesh *parallel.Mesh, timeline bool) (result, error) {
	var res result
	pdt, forward := c.dtypes()
	b := nn.NewBuilder(dev, pdt, 1)
	if c.PP > 1 {
		b = nn.NewDeferredBuilder(dev, pdt, 1)
	}
	grad := dtype.F32
	if c.AMPParams {
		grad = pdt
	}
	cfg := splitGPT(c, m)
	micro := c.Batch / c.Ranks / c.Accum
	schedule := parallel.OneFOneB
	if c.Schedule == "gpipe" {
		schedule = parallel.GPipe
	}
	sc := train.SplitConfig{TP: c.TP, PP: c.PP, DP: c.Ranks, Zero: c.Zero, Sequence: c.Sequence, Schedule: schedule, Micro: c.Accum,
		Batch: micro, Seq: c.Seq, Clip: 1, Autocast: forward, Grad: grad, GradF32: c.GradF32, Scaler: amp.ScalerConfig{InitScale: 1}} // scale 1: as step's
	master := pdt != dtype.F32
	g, err := train.NewSplitGPT(mesh, b, "gpt", cfg, autograd.NewGenerator(1), sc, func(ps []nn.Param, d *parallel.DDP) (optim.Optimizer, error) {
		if d != nil {
			return newOptimizer(c, ps, d, master)
		}
		return newOptimizer(c, ps, nil, master)
	})
	if err != nil {
		return res, err
	}
	defer g.Release()
	res.params = nn.Count(g)
	g.SetRunBlocks(runBlocks(c))
	input := func(s *autograd.Scope, shape ...int) *autograd.Tensor {
		defer s.Within("input")()
		return s.Zeros(dev, dtype.I64, shape...)
	}
	tokens := func(s *autograd.Scope, _ int) *autograd.Tensor { return input(s, micro, c.Seq) }
	targets := func(s *autograd.Scope, _ int) *autograd.Tensor { return input(s, micro*c.Seq) }
	for i := range c.Steps {
		last := i == c.Steps-1
		if last && timeline {
			dev.StartTimeline()
		}
		began := time.Now()
		loss, err := g.Step(tokens, targets)
		if last {
			res.seconds, res.loss = time.Since(began).Seconds(), loss
			if timeline {
				res.timeline = dev.StopTimeline()
			}
		}
		if err != nil {
			return res, err
		}
	}
	return res, nil
}

// runBlocks returns c's checkpointing of a block list (nil: none).
func runBlocks(c Config) func([]nn.Layer, *autograd.Tensor) *autograd.Tensor {
	switch {
	case c.Selective:
		pol := checkpoint.DefaultPolicy()
		if c.SelectiveLean {
			pol = checkpoint.LeanPolicy()
		}
		return func(ls []nn.Layer, x *autograd.Tensor) *autograd.Tensor { return checkpoint.SelectiveEach(ls, pol, x) }
	case c.CheckpointBudget > 0:
		return checkpoint.NewBudget(c.CheckpointBudget).Forward
	case c.Checkpoint != 0:
		seg := max(c.Checkpoint, 0) // -1: ⌈√n⌉
		return func(ls []nn.Layer, x *autograd.Tensor) *autograd.Tensor { return checkpoint.Sequential(ls, seg, x) }
	}
	return nil
}
