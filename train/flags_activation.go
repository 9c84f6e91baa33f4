package train

import (
	"flag"

	"github.com/headroom-ml/headroom/autograd"
	"github.com/headroom-ml/headroom/checkpoint"
	"github.com/headroom-ml/headroom/nn"
)

// ActivationFlags are the activation-memory flags beyond checkpointing
// (issue #18): --selective, --fused-loss.
type ActivationFlags struct {
	// Selective runs each block in a checkpoint.Selective region under
	// checkpoint.DefaultPolicy: matmul and attention outputs are kept,
	// pointwise ops, norms, dropout and softmax recomputed in backward.
	Selective bool
	// FusedLoss computes a GPT's LM head and cross-entropy together in
	// row chunks (nn.GPT.FusedLoss): the batch's logits never exist.
	FusedLoss bool
}

// registerActivation adds the ActivationFlags to fs.
func (a *ActivationFlags) registerActivation(fs *flag.FlagSet) {
	fs.BoolVar(&a.Selective, "selective", false, "selective recomputation: keep each block's matmul and attention outputs, recompute its pointwise ops, norms, dropout and softmax in backward (not with --checkpoint or --checkpoint-budget)")
	fs.BoolVar(&a.FusedLoss, "fused-loss", false, "the LM head and the cross-entropy in chunks of 256 rows: the batch×context×vocabulary logits never exist (not with --tp or --pp)")
}

// selectiveBlocks is RunBlocks for --selective.
func (c *Common) selectiveBlocks() (func([]nn.Layer, *autograd.Tensor) *autograd.Tensor, string, error) {
	if c.Checkpoint != "" || c.CheckpointBudget != "" {
		return nil, "", Usagef("--selective with --checkpoint or --checkpoint-budget: choose one")
	}
	return func(ls []nn.Layer, x *autograd.Tensor) *autograd.Tensor { return checkpoint.SelectiveEach(ls, nil, x) },
		"selective recomputation", nil
}
