package nn

// BlockFLOPs is the forward matrix-product FLOPs of one block of the GPT
// on batch sequences of seq tokens: its four Linears (12·Width² weights,
// two FLOPs each per token) and attention's q·kᵀ and weights·v
// (2·seq·Width each per token). Pointwise ops, norms and softmax are not
// counted.
func (c GPTConfig) BlockFLOPs(batch, seq int) int64 {
	tokens, t, d := int64(batch)*int64(seq), int64(seq), int64(c.Width)
	return 2*tokens*12*d*d + 4*tokens*t*d
}

// SelectiveFLOPs is the part of BlockFLOPs a block's selective
// recomputation (checkpoint.DefaultPolicy) runs again: with
// MaterializedAttention the core attention's q·kᵀ and weights·v
// (4·seq·Width per token, bmm), else nothing (every product's output is
// kept).
func (c GPTConfig) SelectiveFLOPs(batch, seq int) int64 {
	if !c.MaterializedAttention {
		return 0
	}
	return 4 * int64(batch) * int64(seq) * int64(seq) * int64(c.Width)
}
