package parallel

import (
	"fmt"

	"github.com/headroom-ml/headroom/autograd"
	"github.com/headroom-ml/headroom/device"
	"github.com/headroom-ml/headroom/dtype"
	"github.com/headroom-ml/headroom/nn"
)

// PipeConfig configures pipeline parallelism (NewPipe).
type PipeConfig struct {
	// MicroBatches is the number of micro-batches per step (M ≥ 1).
	MicroBatches int
	// Batch and Seq are every micro-batch's shape (B, T): the stages after
	// the first allocate their inputs from them.
	Batch, Seq int
	// Schedule is OneFOneB (the default) or GPipe.
	Schedule Schedule
	// Split is the number of blocks of each stage, in stage order (each
	// ≥ 1, summing to the model's Layers); nil: DefaultSplit.
	Split []int
	// Autocast is the forward's autocast dtype (BF16 or F16; Invalid, the
	// default: none), as train.Stepper's: each stage's forward and the
	// loss run under it, the 1/M scaling after it. (F16 without a loss
	// scaler may underflow: Pipe has none yet.)
	Autocast dtype.DType
}

// DefaultSplit cuts layers blocks into stages contiguous stages of
// ⌊layers/stages⌋ blocks each and gives the layers mod stages blocks left
// over one each to stages 1, 2, … — never to stage 0, which holds the
// embeddings and, under 1F1B, the activations of the most micro-batches
// (P of them). It returns nil when layers < stages.
func DefaultSplit(layers, stages int) []int {
	if stages < 1 || layers < stages {
		return nil
	}
	split := make([]int, stages)
	extra := layers % stages
	for s := range split {
		split[s] = layers / stages
		if s >= 1 && s <= extra {
			split[s]++
		}
	}
	return split
}

// Pipe is one stage of a GPT trained with pipeline parallelism: rank s of
// the communicator's P ranks runs blocks [lo, hi) of the model, stage 0
// also the embeddings and stage P−1 the final LayerNorm and the LM head.
// Activations go forward and their gradients back through the
// communicator's PointToPoint transfers. Step runs a step's micro-batches
// (forward and backward) under the schedule, accumulating the gradients
// of this stage's parameters (Params); the optimizer step is the
// caller's, one per stage over Params.
type Pipe struct {
	c             Communicator
	p2p           PointToPoint
	stage, stages int
	lo, hi        int // this stage's blocks
	parts         stageParts
	params        []nn.Param
	cfg           PipeConfig
	ddp           *DDP // SyncWith's: the micro-batches but the last run under its NoSync
	dt            dtype.DType
	dev           *device.Device
	stats         PipeStats
}

// PipeStats describes a stage's last Step.
type PipeStats struct {
	// Bubble is the idle fraction (P−1)/(M+P−1) of the schedule.
	Bubble float64
	// Peak is the most bytes live at once on the stage's device during
	// the step (its allocator's requested bytes, every tag).
	Peak int64
	// PeakActivation is the most activation-tagged bytes live at once.
	PeakActivation int64
	// InFlight is the most micro-batches whose forward had run and whose
	// backward had not: at most P−s under 1F1B on stage s, M under GPipe.
	InFlight int
	// Held is the most activation bytes, above the step's start, live
	// right after one of the step's forward passes: InFlight times one
	// micro-batch's (StageActivationBytes) on the stages before the last.
	Held int64
}

// NewPipe makes this rank's stage of model (the same configuration on
// every rank, built with the same seed: nn.NewDeferredBuilder gives a
// rank storage for its own stage's parameters only, which materialise
// when first used). The communicator must implement PointToPoint. Tied
// embeddings and shared layers, whose parameters would span stages, are
// refused when there are several stages.
func NewPipe(c Communicator, model *nn.GPT, cfg PipeConfig) (*Pipe, error) {
	p, err := pipeOf(c, model.Config, cfg)
	if err != nil {
		return nil, err
	}
	l := model.Layers()
	l.Blocks = l.Blocks[p.lo:p.hi]
	p.parts = gptStage{l, model.Config.Width}
	blocks := make([]nn.Module, len(model.Blocks))
	for i, k := range model.Blocks {
		blocks[i] = k
	}
	var head nn.Module
	if model.Head != nil {
		head = model.Head
	}
	return p, p.bind(p.modules([]nn.Module{model.Wte, model.Wpe}, blocks, []nn.Module{model.LNF, head}))
}

// pipeOf checks a pipeline of the model of configuration mc over c and
// returns this rank's stage, its blocks placed, without parts or
// parameters.
func pipeOf(c Communicator, mc nn.GPTConfig, cfg PipeConfig) (*Pipe, error) {
	p2p, ok := c.(PointToPoint)
	if !ok {
		return nil, fmt.Errorf("parallel: new_pipe: communicator %T has no point-to-point transfers (PointToPoint)", c)
	}
	P := c.Size()
	split := cfg.Split
	if split == nil {
		split = DefaultSplit(mc.Layers, P)
	}
	if err := checkPipe(cfg, mc, split, P); err != nil {
		return nil, fmt.Errorf("parallel: new_pipe: %w", err)
	}
	p := &Pipe{c: c, p2p: p2p, stage: c.Rank(), stages: P, cfg: cfg}
	for s := range p.stage {
		p.lo += split[s]
	}
	p.hi = p.lo + split[p.stage]
	return p, nil
}

// modules returns the modules of this stage — the embeddings on stage 0,
// blocks [lo, hi), the final modules on the last stage (nil entries
// skipped) — and the others.
func (p *Pipe) modules(first, blocks, last []nn.Module) (mine, others []nn.Module) {
	put := func(in bool, ms ...nn.Module) {
		for _, m := range ms {
			switch {
			case isNil(m):
			case in:
				mine = append(mine, m)
			default:
				others = append(others, m)
			}
		}
	}
	put(p.stage == 0, first...)
	put(true, blocks[p.lo:p.hi]...)
	put(false, blocks[:p.lo]...)
	put(false, blocks[p.hi:]...)
	put(p.stage == p.stages-1, last...)
	return mine, others
}

// bind makes the stage's parameters those of mine, materialised, and
// takes the stage's dtype and device from them.
func (p *Pipe) bind(mine, _ []nn.Module) error {
	for _, m := range mine {
		p.params = append(p.params, m.Params()...)
	}
	if len(p.params) == 0 {
		return fmt.Errorf("parallel: new_pipe: stage %d has no parameters", p.stage)
	}
	if err := materialise(p.params); err != nil {
		return fmt.Errorf("parallel: new_pipe: stage %d's parameters: %w", p.stage, err)
	}
	p.dt, p.dev = p.params[0].T.DType(), p.params[0].T.Device()
	return nil
}

// stageParts runs a stage's share of a model's forward.
type stageParts interface {
	// embed returns the embeddings of token indices (B, T): stage 0.
	embed(idx *autograd.Tensor) *autograd.Tensor
	// body runs the stage's blocks on h, released.
	body(h *autograd.Tensor) *autograd.Tensor
	// out returns the logits of the last block's output h: the last stage.
	out(h *autograd.Tensor) *autograd.Tensor
	// shape is that of the activation between stages for a (B, T) batch.
	shape(b, t int) []int
}

// gptStage is an nn.GPT's stage: its layers with the stage's blocks.
type gptStage struct {
	l     nn.GPTLayers
	width int
}

func (g gptStage) embed(idx *autograd.Tensor) *autograd.Tensor { return g.l.Embed("pipe", idx) }
func (g gptStage) body(h *autograd.Tensor) *autograd.Tensor    { return g.l.Body(h) }
func (g gptStage) out(h *autograd.Tensor) *autograd.Tensor     { return g.l.Out(h) }
func (g gptStage) shape(b, t int) []int                        { return []int{b, t, g.width} }

// materialise gives every unbound parameter among ps its storage through
// its fetch function (a deferred builder's writes its initial values), so
// that an optimizer can be made over them.
func materialise(ps []nn.Param) error {
	s := autograd.NewScope()
	defer s.Release()
	return autograd.Try(func() {
		for _, p := range ps {
			if p.T.Unbound() {
				s.Use(p.T).Release()
			}
		}
	})
}

// checkPipe returns what is wrong with a pipeline's configuration.
func checkPipe(cfg PipeConfig, mc nn.GPTConfig, split []int, P int) error {
	switch {
	case cfg.MicroBatches < 1 || cfg.Batch < 1:
		return fmt.Errorf("%d micro-batches of %d sequences: want both ≥ 1", cfg.MicroBatches, cfg.Batch)
	case cfg.Seq < 1 || cfg.Seq > mc.Context:
		return fmt.Errorf("sequence length %d: want 1 ≤ T ≤ context %d", cfg.Seq, mc.Context)
	case cfg.Schedule != OneFOneB && cfg.Schedule != GPipe:
		return fmt.Errorf("unknown %s", cfg.Schedule)
	case cfg.Autocast != dtype.Invalid && !cfg.Autocast.IsLowPrecision():
		return fmt.Errorf("autocast %s: want bf16 or f16 (or none)", cfg.Autocast)
	case P > 1 && (mc.TieEmbeddings || mc.ShareLayers):
		return fmt.Errorf("tied embeddings or shared layers would span stages: not supported with %d stages", P)
	case split == nil:
		return fmt.Errorf("%d blocks cannot fill %d stages: want at least one block per stage", mc.Layers, P)
	case len(split) != P:
		return fmt.Errorf("split %v has %d stages, the communicator %d ranks", split, len(split), P)
	}
	sum := 0
	for s, k := range split {
		if k < 1 {
			return fmt.Errorf("split %v gives stage %d %d blocks: want ≥ 1", split, s, k)
		}
		sum += k
	}
	if sum != mc.Layers {
		return fmt.Errorf("split %v holds %d blocks, the model %d", split, sum, mc.Layers)
	}
	return nil
}

// Params returns this stage's parameters: the optimizer's.
func (p *Pipe) Params() []nn.Param { return p.params }

// Train is part of nn.Module, so that a Pipe can stand for its stage's
// parameters (NewDDP over the data-parallel group): it does nothing (the
// model's Train switches dropout).
func (p *Pipe) Train(bool) {}

// SyncWith makes Step run the backward passes of every micro-batch but
// the last under d.NoSync, so that d — data parallelism over this stage's
// parameters (NewDDP(dataGroup, pipe, …)) — reduces the micro-batches'
// accumulated gradients once per step, overlapped with the last
// micro-batch's backward (ZeRO stages 2 and 3 reduce every micro-batch:
// see DDP.NoSync).
func (p *Pipe) SyncWith(d *DDP) { p.ddp = d }

// Stage returns this rank's stage and the range [lo, hi) of its blocks.
func (p *Pipe) Stage() (stage, lo, hi int) { return p.stage, p.lo, p.hi }

// Stats returns what the last Step measured on this stage.
func (p *Pipe) Stats() PipeStats { return p.stats }

// StageActivationBytes is the closed form of the activation bytes one
// micro-batch (B, T) leaves alive on a stage of blocks blocks of a GPT of
// configuration c without dropout, between its forward and its backward,
// for a stage other than the last (whose backward follows its forward at
// once): on stage 0 the token indices (8·B·T, I64) and the embeddings'
// sum (B·T·C·s), on a later stage the received input (B·T·C·s); then
// each block's 17·B·T·C·s + 4·B·T·cs + B·H·T·cs (nn.GPTBlock), with s the
// dtype's size and cs the statistics' (4, or 8 for F64). The output sent
// on is the last block's result, counted in it.
func StageActivationBytes(c nn.GPTConfig, B, T, blocks int, dt dtype.DType, first bool) int64 {
	s, cs := int64(dt.Size()), int64(4)
	if dt == dtype.F64 {
		cs = 8
	}
	bt, C, H := int64(B*T), int64(c.Width), int64(c.Heads)
	in := bt * C * s
	if first {
		in += 8 * bt
	}
	return in + int64(blocks)*(17*bt*C*s+4*bt*cs+H*bt*cs)
}

// SetRunBlocks makes this stage run its blocks through run instead of a
// plain loop (activation checkpointing; nil: the plain loop), as
// nn.GPT.RunBlocks does for the whole model: the stage holds a copy of the
// model's parts, taken when the Pipe was made, so setting the model's
// RunBlocks afterwards does not reach it. A tensor-parallel stage follows
// its TensorGPT's RunBlocks.
func (p *Pipe) SetRunBlocks(run func([]nn.Layer, *autograd.Tensor) *autograd.Tensor) {
	if s, ok := p.parts.(gptStage); ok {
		s.l.RunBlocks = run
		p.parts = s
	}
}
