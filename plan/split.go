package plan

import (
	"fmt"
	"time"

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
	case c.TP > 1 && c.PP > 1:
		return fmt.Errorf("tp %d with pp %d: not available yet (tensor parallelism inside pipeline stages)", c.TP, c.PP)
	case c.Ranks > 1:
		return fmt.Errorf("dp %d with tp %d, pp %d: not available yet (data parallelism over model-parallel groups): plan dp 1", c.Ranks, c.TP, c.PP)
	case c.Zero > 0 || c.Offload || c.AMPParams || c.Prune > 0:
		return fmt.Errorf("zero, offload, amp params and prune with tp %d, pp %d: not available yet", c.TP, c.PP)
	case c.PP > 1 && (c.AMP != dtype.Invalid || c.Checkpoint != 0 || c.CheckpointBudget != 0):
		return fmt.Errorf("amp and checkpointing with pp %d: not available yet", c.PP)
	case g.Heads%c.TP != 0:
		return fmt.Errorf("tp %d for %s: its %d heads must divide by tp", c.TP, m.Name, g.Heads)
	case g.Layers < c.PP:
		return fmt.Errorf("pp %d for %s: more stages than its %d layers", c.PP, m.Name, g.Layers)
	case c.Sequence && (c.Batch/c.Accum*c.Seq)%c.TP != 0:
		return fmt.Errorf("sequence parallelism: a micro-batch's %d tokens do not divide by tp %d", c.Batch/c.Accum*c.Seq, c.TP)
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

// layout names rank r's part of the model ("tp 1/2", "stage 3/16"; ""
// without model parallelism).
func (c Config) layout(r int) string {
	switch {
	case c.TP > 1:
		return fmt.Sprintf("tp %d/%d", r, c.TP)
	case c.PP > 1:
		return fmt.Sprintf("stage %d/%d", r, c.PP)
	}
	return ""
}

// splitStep builds rank comm.Rank()'s part of the GPT on dev and runs
// c.Steps steps on zeros, as the transformer example's --tp and --pp do
// (train.SplitGPT): the same flags, clip 1 as the GPT plans' Stepper.
func splitStep(c Config, m Model, dev *device.Device, comm parallel.Communicator, timeline bool) (result, error) {
	var res result
	_, forward := c.dtypes()
	b := nn.NewBuilder(dev, dtype.F32, 1)
	if c.PP > 1 {
		b = nn.NewDeferredBuilder(dev, dtype.F32, 1)
	}
	cfg := splitGPT(c, m)
	micro := c.Batch / c.Accum
	schedule := parallel.OneFOneB
	if c.Schedule == "gpipe" {
		schedule = parallel.GPipe
	}
	sc := train.SplitConfig{TP: c.TP, PP: c.PP, Sequence: c.Sequence, Schedule: schedule, Micro: c.Accum, Batch: micro, Seq: c.Seq, Clip: 1, Autocast: forward}
	g, err := train.NewSplitGPT(comm, b, "gpt", cfg, autograd.NewGenerator(1), sc, func(ps []nn.Param) (optim.Optimizer, error) {
		return newOptimizer(c, ps, nil, false)
	})
	if err != nil {
		return res, err
	}
	defer g.Release()
	res.params = nn.Count(g)
	if g.TP != nil {
		g.TP.RunBlocks = runBlocks(c)
	}
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
	case c.CheckpointBudget > 0:
		return checkpoint.NewBudget(c.CheckpointBudget).Forward
	case c.Checkpoint != 0:
		seg := max(c.Checkpoint, 0) // -1: ⌈√n⌉
		return func(ls []nn.Layer, x *autograd.Tensor) *autograd.Tensor { return checkpoint.Sequential(ls, seg, x) }
	}
	return nil
}
