package train

import (
	"fmt"

	"github.com/headroom-ml/headroom/autograd"
	"github.com/headroom-ml/headroom/dtype"
	"github.com/headroom-ml/headroom/nn"
	"github.com/headroom-ml/headroom/optim"
	"github.com/headroom-ml/headroom/parallel"
)

// SplitConfig says how a GPT is split over the ranks of one communicator:
// TP ranks of tensor parallelism, or PP pipeline stages (one of the two
// above 1 for now; both is not available yet).
type SplitConfig struct {
	TP, PP int
	// Sequence turns on sequence parallelism inside the TP group.
	Sequence bool
	// Schedule is the pipeline's (OneFOneB or GPipe).
	Schedule parallel.Schedule
	// Micro is the number of micro-batches per step (--accum), Batch and
	// Seq every micro-batch's shape.
	Micro, Batch, Seq int
	// Clip is the global gradient-norm limit (0: none); Autocast the
	// forward's 16-bit dtype under TP (Invalid: none).
	Clip     float64
	Autocast dtype.DType
	// Schedule of the learning rate (nil: the optimizer's).
	LR optim.Schedule
}

// SplitGPT is one rank's part of a GPT trained with tensor or pipeline
// parallelism, with its optimizer.
type SplitGPT struct {
	TP    *parallel.TensorGPT // under TP
	Pipe  *parallel.Pipe      // under PP
	GPT   *nn.GPT             // the model the pipe cuts (PP)
	Opt   optim.Optimizer
	cfg   SplitConfig
	sh    optim.Sharded // the optimizer whose sums span the ranks (clipping)
	st    *Stepper      // TP's
	steps int
}

// NewSplitGPT builds rank comm.Rank()'s part of the GPT of cfg with b
// (under PP a deferred builder: each stage stores only its blocks) and
// its optimizer over its parameters (newOpt). gen draws dropout masks.
func NewSplitGPT(comm parallel.Communicator, b *nn.Builder, name string, cfg nn.GPTConfig, gen *autograd.Generator, sc SplitConfig,
	newOpt func([]nn.Param) (optim.Optimizer, error)) (*SplitGPT, error) {
	g := &SplitGPT{cfg: sc}
	var ps []nn.Param
	if sc.PP > 1 {
		m, err := nn.NewGPT(b, name, cfg, gen)
		if err != nil {
			return nil, err
		}
		g.GPT = m
		if g.Pipe, err = parallel.NewPipe(comm, m, parallel.PipeConfig{MicroBatches: sc.Micro, Batch: sc.Batch, Seq: sc.Seq, Schedule: sc.Schedule}); err != nil {
			g.Release()
			return nil, err
		}
		ps = g.Pipe.Params()
	} else {
		m, err := parallel.NewTensorGPT(b, name, cfg, comm, gen, parallel.TensorOptions{Sequence: sc.Sequence})
		if err != nil {
			return nil, err
		}
		g.TP, ps = m, m.Params()
	}
	opt, err := newOpt(ps)
	if err != nil {
		g.Release()
		return nil, err
	}
	g.Opt = opt
	if g.Pipe != nil {
		g.sh = g.Pipe.Optimizer(opt)
	} else {
		g.sh = &tensorOptimizer{Optimizer: opt, comm: comm, whole: wholeGrads(g.TP)}
		g.st = &Stepper{Opt: g.sh, Accum: sc.Micro, Clip: sc.Clip, Autocast: sc.Autocast, Schedule: sc.LR}
	}
	return g, nil
}

// model is what the rank built: its TensorGPT, or the GPT its stage cuts.
func (g *SplitGPT) model() nn.Module {
	if g.TP != nil {
		return g.TP
	}
	return g.GPT
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

// Release releases the optimizer and the model.
func (g *SplitGPT) Release() {
	if g.Opt != nil {
		g.Opt.Release()
	}
	nn.Release(g.model())
}

// Step runs one optimizer step over the micro-batches: tokens(s, i) and
// targets(s, i) return micro-batch i's token indices (Batch, Seq) and
// next tokens (Batch·Seq), made in s. It returns the step's mean loss.
func (g *SplitGPT) Step(tokens, targets func(s *autograd.Scope, i int) *autograd.Tensor) (float64, error) {
	if g.TP != nil {
		loss, _, err := g.st.Step(func(s *autograd.Scope, i int) *autograd.Tensor {
			return g.TP.Loss(g.TP.Forward(tokens(s, i)), targets(s, i), autograd.CEOptions{})
		})
		return loss, err
	}
	if g.cfg.LR != nil {
		g.Opt.SetLR(g.cfg.LR.LR(g.steps))
	}
	defer g.Opt.ZeroGrad()
	vocab := g.GPT.Config.Vocab
	loss, err := g.Pipe.Step(parallel.PipeBatch{
		Tokens: tokens,
		Loss: func(logits *autograd.Tensor, i int) *autograd.Tensor {
			flat := logits.Reshape(-1, vocab)
			return autograd.CrossEntropy(flat, targets(logits.Scope(), i), autograd.CEOptions{})
		},
	})
	if err != nil {
		return 0, fmt.Errorf("step %d: %w", g.steps, err)
	}
	if err := g.update(); err != nil {
		return 0, fmt.Errorf("step %d: %w", g.steps, err)
	}
	g.steps++
	return loss, nil
}

// update clips the stage's gradients by the global norm over the stages
// (computed without a clip, as Stepper does, to refuse a non-finite one)
// and steps the optimizer.
func (g *SplitGPT) update() error {
	clip := g.cfg.Clip
	if clip <= 0 {
		clip = inf
	}
	norm, err := optim.ClipGradNormOf(g.sh, clip)
	if err != nil {
		return err
	}
	if !Finite(norm) {
		return fmt.Errorf("gradient norm is %v", norm)
	}
	return g.Opt.Step()
}
