// Package checkpoint trades compute for memory: a checkpointed function
// keeps only its inputs during the forward pass and recomputes its
// activations when backward needs them (Chen et al. 2016).
//
// Run checkpoints one function; Sequential cuts a stack of layers into
// segments (⌈√n⌉ by default) and checkpoints all but the last, so the
// activations held at once fall from O(n) to O(√n); Budget picks the
// segments from the measured activation bytes of each layer so that the
// activation peak stays under a byte budget.
//
// Selective (SelectiveEach for a stack, --selective in the examples and
// the planner) is selective recomputation (Korthikanti et al. 2022,
// torchtitan's op-level AC): a per-op-kind Policy says which saved tensors
// the forward keeps. DefaultPolicy keeps the outputs of the autograd ops
// matmul, linear, scaled_dot_product_attention and conv2d (DefaultSave)
// and drops everything else an op saves (outputs of add, mul, gelu, relu,
// layer_norm, batch_norm, dropout masks, softmax, log_softmax, casts).
// The kind of a saved tensor is the op that allocated its storage (its
// device.Label Op), so the policy needs no cooperation from the ops.
// Backward reruns the region's forward as Run does and uses each kept
// tensor in place of its recomputed twin, which it frees at once: the
// gradients are bit-identical to plain autograd (tests on F64, F32 and
// BF16 autocast, dropout and batch-norm included). Memory while a region
// waits for backward: its inputs + its outputs + the distinct kept blocks
// (Stats.KeptBytes), against Run's inputs + outputs and plain's inputs +
// outputs + every saved block; while it recomputes, Run's transients. Time:
// the recomputation skips the arithmetic of each Linear whose output was
// kept (autograd.OutputLog replays it), unless that output was written in
// place after the op; every other op, the Linears whose outputs were not
// kept (nothing saved them) included, runs again.
//
// Recomputation reproduces the forward exactly: it runs under the same
// autocast dtype, replays the same random draws (dropout masks), and
// batch-norm does not update its running statistics a second time. It then
// checks that it saved the same number of tensors, of the same shapes and
// dtypes, as the forward would have, and fails with an *autograd.Error if
// not (the forward depended on something that changed in between).
//
// Knobs and defaults: Sequential's segments (≤ 0: ⌈√n⌉); Budget's byte
// budget (required). Checkpointing does nothing when the scope records no
// graph (evaluation, NoGrad).
//
//	loss := model.Head(checkpoint.Sequential(model.Blocks, 0, x))
package checkpoint
