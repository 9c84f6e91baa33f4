package parallel

import (
	"github.com/headroom-ml/headroom/autograd"
	"github.com/headroom-ml/headroom/nn"
)

// NewTensorPipe makes this rank's stage of a pipeline whose stages are
// tensor-parallel: model is this rank's TensorGPT, built over its Tensor
// group (Mesh.Tensor) with the same configuration and seed on every
// rank, and c is its Pipe group (Mesh.Pipe), along which the stage's
// activations go to the rank of the same tensor coordinate in the next
// stage: (B, T, Width), or this rank's B·T/Tensor rows of them under
// sequence parallelism. Stage 0 runs the embeddings, every stage its
// blocks (RunBlocks, checkpointing, applies), the last stage ln_f and the
// head, whose logits (B, T, Vocab/Tensor) go to PipeBatch.Loss, which
// returns model.Loss of them. The parameters of the other stages'
// modules are released here, so that the rank keeps only its stage's
// shards (model's own Forward can no longer run). The rest is NewPipe's.
func NewTensorPipe(c Communicator, model *TensorGPT, cfg PipeConfig) (*Pipe, error) {
	p, err := pipeOf(c, model.Config, cfg)
	if err != nil {
		return nil, err
	}
	blocks := make([]nn.Module, len(model.Blocks))
	ls := make([]nn.Layer, len(model.Blocks))
	for i, k := range model.Blocks {
		blocks[i], ls[i] = k, k
	}
	p.parts = tensorStage{g: model, blocks: ls[p.lo:p.hi], b: cfg.Batch, t: cfg.Seq}
	var head nn.Module
	if model.Head != nil {
		head = model.Head
	}
	mine, others := p.modules([]nn.Module{model.Wte, model.Wpe}, blocks, []nn.Module{model.LNF, head})
	if p.stages > 1 {
		for _, m := range others {
			nn.Release(m)
		}
	}
	return p, p.bind(mine, others)
}

// tensorStage is a TensorGPT's stage.
type tensorStage struct {
	g      *TensorGPT
	blocks []nn.Layer
	b, t   int
}

func (s tensorStage) embed(idx *autograd.Tensor) *autograd.Tensor { return s.g.embedStage(idx) }
func (s tensorStage) out(h *autograd.Tensor) *autograd.Tensor     { return s.g.outStage(h) }

func (s tensorStage) body(h *autograd.Tensor) *autograd.Tensor {
	s.g.shape(s.b, s.t)
	return s.g.blocks(s.blocks, h)
}

func (s tensorStage) shape(b, t int) []int {
	if s.g.Options.Sequence {
		return []int{b * t / s.g.Comm.Size(), s.g.Config.Width}
	}
	return []int{b, t, s.g.Config.Width}
}
