package train

import (
	"flag"

	"github.com/headroom-ml/headroom/autograd"
	"github.com/headroom-ml/headroom/checkpoint"
	"github.com/headroom-ml/headroom/nn"
)

// ActivationFlags are the activation-memory flags beyond checkpointing
// (issue #18): --selective, --fused-loss, --offload-activations.
type ActivationFlags struct {
	// Selective runs each block in a checkpoint.Selective region under
	// checkpoint.DefaultPolicy: matmul and attention outputs are kept,
	// pointwise ops, norms, dropout and softmax recomputed in backward.
	// SelectiveLean (--selective-lean) uses checkpoint.LeanPolicy instead.
	Selective     bool
	SelectiveLean bool
	// FusedLoss computes a GPT's LM head and cross-entropy together in
	// row chunks (nn.GPT.FusedLoss): the batch's logits never exist.
	FusedLoss bool
	// OffloadActivations moves what each block but the last saves for
	// backward to a host device cpu:100+r and prefetches it back in
	// backward (checkpoint.Offload, DefaultWindow blocks ahead).
	OffloadActivations bool

	budgetFlags

	acts *actOffload // --offload-activations' hosts, shared by every RunBlocks
}

// registerActivation adds the ActivationFlags to fs.
func (a *ActivationFlags) registerActivation(fs *flag.FlagSet) {
	a.acts = newActOffload()
	a.registerBudget(fs)
	fs.BoolVar(&a.Selective, "selective", false, "selective recomputation: keep each block's matmul and attention outputs, recompute its pointwise ops, norms, dropout and softmax in backward (not with --checkpoint or --checkpoint-budget)")
	fs.BoolVar(&a.SelectiveLean, "selective-lean", false, "with --selective: keep a product's output only when a later op saves it (less memory; a GPT block's c_attn and both c_proj products run again in backward)")
	fs.BoolVar(&a.OffloadActivations, "offload-activations", false, "activation offload: what each block but the last saves for backward goes to a host device cpu:100+r during the forward and comes back in backward, 2 blocks ahead of use (not with --checkpoint, --checkpoint-budget or --selective; --offload is the optimizer's)")
	fs.BoolVar(&a.FusedLoss, "fused-loss", false, "the LM head and the cross-entropy in chunks of 256 rows: the batch×context×vocabulary logits never exist (not with --tp or --pp)")
}

// selectiveBlocks is RunBlocks for --selective.
func (c *Common) selectiveBlocks() (func([]nn.Layer, *autograd.Tensor) *autograd.Tensor, string, error) {
	if c.Checkpoint != "" || c.CheckpointBudget != "" {
		return nil, "", Usagef("--selective with --checkpoint or --checkpoint-budget: choose one")
	}
	pol, what := checkpoint.DefaultPolicy(), "selective recomputation"
	if c.SelectiveLean {
		pol, what = checkpoint.LeanPolicy(), "selective recomputation (lean)"
	}
	return func(ls []nn.Layer, x *autograd.Tensor) *autograd.Tensor { return checkpoint.SelectiveEach(ls, pol, x) },
		what, nil
}
