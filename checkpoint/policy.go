package checkpoint

import "github.com/headroom-ml/headroom/device"

// Policy says, per op kind, whether a Selective region keeps the tensors
// that op made when a later op saves them for backward (save) or drops
// them and recomputes them in backward (recompute). The op kind is the
// autograd op that allocated the tensor's storage (its device.Label Op).
type Policy struct {
	// Save lists the op kinds whose outputs are kept; every other op's
	// outputs are recomputed.
	Save map[string]bool
}

// DefaultSave are the op kinds DefaultPolicy keeps, as Megatron-LM's
// selective recomputation and torchtitan's op-level AC do: the outputs of
// matrix products and attention, the expensive ops. Everything else —
// pointwise ops (add, mul, gelu, relu, …), norms (layer_norm,
// batch_norm), dropout, softmax and log_softmax, casts — is recomputed.
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

// keeps reports whether the policy keeps a tensor stored in a block with
// label l. Only activations are ever worth dropping.
func (p *Policy) keeps(l device.Label) bool {
	return p != nil && l.Tag == device.Activation && p.Save[l.Op]
}
