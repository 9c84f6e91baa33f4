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
