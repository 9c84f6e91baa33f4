package checkpoint

import "github.com/headroom-ml/headroom/device"

// Policy says, per op kind, whether a Selective region keeps the outputs
// of that op (save) or drops them and recomputes them in backward
// (recompute), as PyTorch's selective activation checkpoint policies do
// (MUST_SAVE / PREFER_RECOMPUTE). The op kind is the autograd op that
// allocated a tensor's storage (its device.Label Op).
//
// A kept output of Linear, MatMul, Conv2d or ScaledDotProductAttention is
// handed back to the same call in backward, which then skips its
// arithmetic (autograd.OutputLog): recomputation runs only the ops the
// policy drops. Kept outputs of other op kinds are kept when a later op
// saves them; their ops run again and their recomputed twins are freed.
type Policy struct {
	// Save lists the op kinds whose outputs are kept; every other op's
	// outputs are recomputed.
	Save map[string]bool
	// SavedOnly keeps an output only when a later op of the region saves
	// it for backward: less memory (a GPT block's c_attn and c_proj
	// outputs, which only a copy and the residual adds read, go), but those
	// products run again in backward. Off by default.
	SavedOnly bool
}

// DefaultSave are the op kinds DefaultPolicy keeps, as Megatron-LM's
// selective recomputation and torchtitan's op-level AC do: the outputs of
// matrix products with a weight and of the fused attention, the expensive
// ops. Everything else — pointwise ops (add, mul, gelu, relu, …), norms
// (layer_norm, batch_norm), dropout, softmax and log_softmax, casts — is
// recomputed, and so is bmm, the product of two activations (a
// materialized attention's q·kᵀ and weights·v, autograd.BMM): its
// (B, H, T, T) operands are the large, cheap part Megatron recomputes as
// the "core attention" (torchtitan saves aten.mm, not aten.bmm).
var DefaultSave = []string{"matmul", "linear", "scaled_dot_product_attention", "conv2d"}

// DefaultPolicy returns a Policy that keeps the outputs of the DefaultSave
// op kinds.
func DefaultPolicy() *Policy {
	p := &Policy{Save: map[string]bool{}}
	for _, op := range DefaultSave {
		p.Save[op] = true
	}
	return p
}

// LeanPolicy returns DefaultPolicy with SavedOnly set: a product's output
// is kept only when a later op of the region saves it (--selective-lean).
func LeanPolicy() *Policy {
	p := DefaultPolicy()
	p.SavedOnly = true
	return p
}

// keeps reports whether the policy keeps a tensor stored in a block with
// label l. Only activations are ever worth dropping.
func (p *Policy) keeps(l device.Label) bool {
	return p != nil && l.Tag == device.Activation && p.Save[l.Op]
}
