package train

import (
	"fmt"

	"github.com/headroom-ml/headroom/amp"
	"github.com/headroom-ml/headroom/autograd"
	"github.com/headroom-ml/headroom/dtype"
	"github.com/headroom-ml/headroom/nn"
	"github.com/headroom-ml/headroom/optim"
	"github.com/headroom-ml/headroom/parallel"
)

// SplitConfig says how a GPT is split over the ranks of a mesh: TP ranks
// of tensor parallelism, PP pipeline stages, DP data-parallel copies of
// the pipeline (ZeRO stage Zero, 0 to 2, over the copies). Every layout
// clips by the whole model's gradient norm (parallel.MeshOptimizer).
type SplitConfig struct {
	TP, PP, DP int
	Zero       int
	// Sequence turns on sequence parallelism inside the TP group.
	Sequence bool
	// Schedule is the pipeline's (OneFOneB or GPipe).
	Schedule parallel.Schedule
	// Micro is the number of micro-batches per step (--accum), Batch and
	// Seq every micro-batch's shape.
	Micro, Batch, Seq int
	// Clip is the global gradient-norm limit (0: none); Autocast the
	// forward's 16-bit dtype (Invalid: none).
	Clip     float64
	Autocast dtype.DType
	// Grad is the gradients' dtype (Common.Precision's grad): F16 scales
	// the loss dynamically (amp.Scaler's defaults), every rank skipping
	// an overflowed step together; others need no scaling. Scaler
	// configures the scaling (zero: amp's defaults).
	Grad   dtype.DType
	Scaler amp.ScalerConfig
	// GradF32 keeps the gradients of 16-bit parameters in F32
	// (amp.MainGradsF32): accumulated over the micro-batches, reduced over
	// the data-parallel copies and read by the master update in F32.
	GradF32 bool
	// Schedule of the learning rate (nil: the optimizer's).
	LR optim.Schedule
}

// SplitGPT is one rank's part of a GPT trained with tensor or pipeline
// parallelism, with its optimizer.
type SplitGPT struct {
	TP   *parallel.TensorGPT // under TP
	Pipe *parallel.Pipe      // under PP
	GPT  *nn.GPT             // the model the pipe cuts (PP)
	Opt  optim.Optimizer
	// Mesh is Opt as the mesh's: its Step clips by the whole model's
	// gradient norm, its AllSum spans every rank.
	Mesh   *parallel.MeshOptimizer
	Scaler *amp.Scaler
	cfg    SplitConfig
	st     *Stepper      // TP's
	ddp    *parallel.DDP // composed with DP > 1: data parallelism over the stage's parameters
	steps  int
}

// Composed reports whether sc composes parallelisms (DP above 1 with TP
// or PP, or TP and PP both above 1): the mesh path of NewSplitGPT.
func (sc SplitConfig) Composed() bool {
	return max(sc.DP, 1) > 1 || sc.TP > 1 && sc.PP > 1
}

// NewSplitGPT builds mesh rank m's part of the GPT of cfg with b (a
// deferred builder under PP: each stage stores only its blocks) and its
// optimizer over its parameters (newOpt; d is the data-parallel engine
// when DP > 1, nil otherwise). gen draws dropout masks.
func NewSplitGPT(m *parallel.Mesh, b *nn.Builder, name string, cfg nn.GPTConfig, gen *autograd.Generator, sc SplitConfig,
	newOpt func(ps []nn.Param, d *parallel.DDP) (optim.Optimizer, error)) (*SplitGPT, error) {
	g := &SplitGPT{cfg: sc, Scaler: amp.NewScaler(sc.Grad, sc.Scaler)}
	if err := g.build(m, b, name, cfg, gen); err != nil {
		g.Release()
		return nil, err
	}
	if sc.GradF32 {
		if _, err := amp.MainGradsF32(g.Params()); err != nil {
			g.Release()
			return nil, err
		}
	}
	if max(sc.DP, 1) > 1 {
		d, err := parallel.NewDDP(m.Data, g.Pipe, parallel.DDPConfig{Zero: sc.Zero})
		if err != nil {
			g.Release()
			return nil, err
		}
		g.ddp = d
		g.Pipe.SyncWith(d)
		b.Dev.ResetPeak() // as Rank.DDP: moving into the flat buffer held the parameters twice for a moment
	}
	if err := g.optimizer(m, newOpt); err != nil {
		g.Release()
		return nil, err
	}
	if g.Pipe == nil {
		g.st = &Stepper{Opt: g.Mesh, Scaler: g.Scaler, Accum: sc.Micro, Autocast: sc.Autocast, Schedule: sc.LR}
	}
	return g, nil
}

// optimizer makes the rank's optimizer (newOpt) and its MeshOptimizer.
func (g *SplitGPT) optimizer(m *parallel.Mesh, newOpt func(ps []nn.Param, d *parallel.DDP) (optim.Optimizer, error)) error {
	opt, err := newOpt(g.Params(), g.ddp)
	if err != nil {
		return err
	}
	g.Opt = opt
	var rep []*autograd.Tensor
	if g.TP != nil {
		rep = g.TP.Replicated()
	}
	if g.Mesh, err = parallel.NewMeshOptimizer(m, opt, rep); err != nil {
		return err
	}
	g.Mesh.Clip = g.cfg.Clip
	return nil
}

// build makes the rank's model: a TensorGPT over m.Tensor when TP > 1,
// cut into m.Pipe's stages when PP > 1 or the pipeline is data-parallel.
func (g *SplitGPT) build(m *parallel.Mesh, b *nn.Builder, name string, cfg nn.GPTConfig, gen *autograd.Generator) error {
	sc := g.cfg
	pc := parallel.PipeConfig{MicroBatches: sc.Micro, Batch: sc.Batch, Seq: sc.Seq, Schedule: sc.Schedule, Autocast: sc.Autocast}
	var err error
	if sc.TP > 1 {
		if g.TP, err = parallel.NewTensorGPT(b, name, cfg, m.Tensor, gen, parallel.TensorOptions{Sequence: sc.Sequence}); err != nil {
			return err
		}
		if sc.PP > 1 || sc.Composed() {
			g.Pipe, err = parallel.NewTensorPipe(m.Pipe, g.TP, pc)
		}
		return err
	}
	if g.GPT, err = nn.NewGPT(b, name, cfg, gen); err != nil {
		return err
	}
	g.Pipe, err = parallel.NewPipe(m.Pipe, g.GPT, pc)
	return err
}

// model is what the rank built: its TensorGPT, or the GPT its stage cuts.
func (g *SplitGPT) model() nn.Module {
	if g.TP != nil {
		return g.TP
	}
	return g.GPT
}

// SetRunBlocks sets the blocks' runner (checkpointing) of the model.
func (g *SplitGPT) SetRunBlocks(run func([]nn.Layer, *autograd.Tensor) *autograd.Tensor) {
	if g.TP != nil {
		g.TP.RunBlocks = run
	} else {
		g.GPT.RunBlocks = run
	}
	if g.Pipe != nil {
		g.Pipe.SetRunBlocks(run)
	}
}

// Params returns the parameters of the rank's part (its stage's under
// PP): SplitGPT is the nn.Module of what the rank trains.
func (g *SplitGPT) Params() []nn.Param {
	if g.Pipe != nil {
		return g.Pipe.Params()
	}
	return g.TP.Params()
}

// Train switches dropout.
func (g *SplitGPT) Train(on bool) { g.model().Train(on) }

// Release releases the optimizer, the data-parallel engine and the model.
func (g *SplitGPT) Release() {
	if g.Opt != nil {
		g.Opt.Release()
	}
	if g.ddp != nil {
		g.ddp.Release()
	}
	if g.Pipe != nil {
		nn.Release(g.Pipe)
	}
	if m := g.model(); m != nil && !isNilModule(m) {
		nn.Release(m)
	}
}

// isNilModule reports whether m holds a nil pointer.
func isNilModule(m nn.Module) bool {
	switch v := m.(type) {
	case *parallel.TensorGPT:
		return v == nil
	case *nn.GPT:
		return v == nil
	}
	return false
}

// Step runs one optimizer step over the micro-batches: tokens(s, i) and
// targets(s, i) return micro-batch i's token indices (Batch, Seq) and
// next tokens (Batch·Seq), made in s. It returns the step's mean loss.
func (g *SplitGPT) Step(tokens, targets func(s *autograd.Scope, i int) *autograd.Tensor) (float64, error) {
	if g.st != nil {
		loss, _, err := g.st.Step(func(s *autograd.Scope, i int) *autograd.Tensor {
			return g.TP.Loss(g.TP.Forward(tokens(s, i)), targets(s, i), autograd.CEOptions{})
		})
		return loss, err
	}
	if g.cfg.LR != nil {
		g.Opt.SetLR(g.cfg.LR.LR(g.steps))
	}
	defer g.Opt.ZeroGrad()
	loss, err := g.Pipe.Step(parallel.PipeBatch{Tokens: tokens, Loss: func(logits *autograd.Tensor, i int) *autograd.Tensor {
		return g.loss(logits, targets(logits.Scope(), i))
	}, Scale: g.Scaler.Scale()})
	if err != nil {
		return 0, fmt.Errorf("step %d: %w", g.steps, err)
	}
	if err := g.update(); err != nil {
		return 0, fmt.Errorf("step %d: %w", g.steps, err)
	}
	g.steps++
	return loss, nil
}

// loss returns the cross-entropy of a stage's logits: the vocabulary-
// parallel one under TP.
func (g *SplitGPT) loss(logits, target *autograd.Tensor) *autograd.Tensor {
	if g.TP != nil {
		return g.TP.Loss(logits, target, autograd.CEOptions{})
	}
	flat := logits.Reshape(-1, g.GPT.Config.Vocab)
	return autograd.CrossEntropy(flat, target, autograd.CEOptions{})
}

// update unscales the gradients (F16: every rank skips an overflowed
// step), then clips them by the whole model's norm and steps (Mesh.Step,
// which refuses a non-finite norm on every rank alike).
func (g *SplitGPT) update() error {
	if _, err := g.Scaler.Step(g.Mesh); err != nil {
		return err
	}
	return g.Scaler.Update()
}
