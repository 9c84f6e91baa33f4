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

// SelectiveFLOPs is the part of BlockFLOPs that selective recomputation
// under checkpoint.DefaultPolicy runs again: the Linears whose outputs no
// op of the block saves, so there is nothing to keep of them — c_attn
// (attention reads a dense copy of q, k, v, released after), attn.c_proj
// and mlp.c_proj (read only by the residual adds): 8 of the block's 12·Width²
// weights.
func (c GPTConfig) SelectiveFLOPs(batch, seq int) int64 {
	d := int64(c.Width)
	return 2 * int64(batch) * int64(seq) * 8 * d * d
}
