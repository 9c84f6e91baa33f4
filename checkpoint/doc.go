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
// torchtitan's op-level AC, PyTorch's selective activation checkpoint): a
// per-op-kind Policy says which outputs the forward keeps. DefaultPolicy
// keeps the outputs of the autograd ops matmul, linear,
// scaled_dot_product_attention (with its log-sum-exp) and conv2d
// (DefaultSave) and drops everything else an op saves (outputs of add,
// mul, gelu, relu, layer_norm, batch_norm, dropout, softmax, log_softmax,
// copies, casts). The kind of a saved tensor is the op that allocated its
// storage (its device.Label Op). Backward reruns the region's forward as
// Run does, but each kept product hands its output back to its call
// (autograd.OutputLog) without arithmetic, unless that output was written
// in place after the op, and kept saved tensors replace their recomputed
// twins, which are freed at once: the gradients are bit-identical to plain
// autograd (tests on F64, F32 and BF16 autocast, dropout and batch-norm
// included). Time: only the dropped ops run again — for a GPT block its
// norms, GELU, dropout, residual adds and head copies, no product and no
// attention. Memory while a region waits for backward: its inputs + its
// outputs + the distinct kept blocks (Stats.KeptBytes), against Run's
// inputs + outputs and plain's inputs + outputs + every saved block; while
// it recomputes, the dropped ops' transients. For a GPT block of width C
// on N tokens at s bytes that is N·C·s·(3 + 1 + 1 + 4 + 1) kept (c_attn,
// attention, attn.c_proj, c_fc, mlp.c_proj) against plain's
// N·C·s·(1 + 3 + 1 + 1 + 1 + 1 + 4 + 4) saved (ln_1's output, the q, k, v
// copy, attention, its (B, T, C) copy, the residual, ln_2's output, c_fc,
// GELU) and the norms' statistics (4·N·4 bytes), attention's N·H·4-byte
// log-sum-exp in both (TestSelectiveGPTBlockClosedForm). Policy.SavedOnly
// keeps a product's output only when a later op saves it (the old lean
// choice): c_attn's and both c_proj outputs then go, and their products
// run again. With a materialized attention (nn.GPTConfig.
// MaterializedAttention) the two attention products are bmm, which
// DefaultPolicy recomputes with the softmax and the attention dropout —
// Megatron's recomputation of the core attention: a block keeps
// N·C·s·(3 + 1 + 4 + 1) and no B·H·T² term, against plain's
// N·C·s·15 + B·H·T²·s·2 (softmax and dropout outputs) + the 4·T² mask
// (TestSelectiveMaterializedGPTBlockClosedForm); backward then reruns
// 4·B·T²·C FLOPs of attention per block. GPT-2 small at batch 8 with
// dropout 0.1 on meta: 0.290× plain's activation bytes at the peak
// materialized, 0.735× with the fused attention, whose plain stores no
// T² term (TestSelectiveGPT2Target).
//
// Offload (--offload-activations in the examples and the planner) trades
// host memory and copy time for device memory, with no recomputation
// (torch.autograd.graph.save_on_cpu, with prefetch): what the ops of each
// layer but the last save for backward is copied to a host device (the
// host cpu:100+r; tag activation there) during the forward, and the
// device block goes as soon as the forward no longer needs it (the layer's
// output stays until the next layer has read it). Backward fetches each
// layer back ahead of use: when it reaches layer g it allocates the device
// copies of layers g-1 … g-Window at once (DefaultWindow = 2) and copies
// the bytes on another goroutine while layer g's backward computes; a
// fetched copy is freed after the last op that saved it has used it.
// Gradients are bit-identical to plain (only bytes move). Memory, for n
// alike layers each saving S activation bytes (their input included):
// the device's activation peak falls from plain's by the offloaded bytes,
// (n-1)·S less the stack's input (its caller holds it), less the window,
// Window·S; the host holds the offloaded bytes from the forward until the
// graph is freed. Each copy stages through a host buffer of at most
// autograd.TransferChunk (4 MiB), at most Window+1 at once. Time: two copies of (n-1)·S bytes per
// step, the backward ones overlapped with compute.
//
// Offload's Modes choose per layer instead: Keep (plain), SelectiveRecompute
// (Selective under DefaultPolicy), Recompute (Run) or Offloaded; nil
// offloads every layer but the last. The layers that are not offloaded
// start the prefetch of the offloaded ones before them, as the last layer
// does. Gradients stay bit-identical to plain (tested with every mode in one
// stack). This is what ModeBudget picks from. A region that runs out of
// memory midway gives back what it had kept (tested at every allocation of
// a step with every mode).
//
// Recomputation reproduces the forward exactly: it runs under the same
// autocast dtype, replays the same random draws (dropout masks), and
// batch-norm does not update its running statistics a second time. It then
// checks that it saved the same number of tensors, of the same shapes and
// dtypes, as the forward would have, and fails with an *autograd.Error if
// not (the forward depended on something that changed in between).
//
// ModeBudget chooses Offload's Modes under one byte budget (the examples'
// and headroom plan's --activation-budget; headroom fit's "activation
// budget" gives it what the capacity leaves). The trade: per layer, the
// cheapest way to free the bytes the budget needs, in estimated seconds.
// It measures the step's activation peak with each layer alone in each
// mode (1 + 3·n runs of the caller's step, on meta: the examples build a
// meta replica of their own step), so freed[i][m] = plain's peak less that
// peak; it then estimates each mode's extra seconds per step from counted
// FLOPs and measured bytes over Rates:
//
//	selective  SelectiveFLOPs[i]/FLOPS + freed[i][selective]/Memory
//	recompute  FLOPs[i]/FLOPS + freed[i][selective]/Memory
//	offload    2·freed[i][offload]/Copy
//
// FLOPs[i] is layer i's forward matmul (or convolution) FLOPs;
// SelectiveFLOPs[i] the part selective recomputation runs again (nil:
// none; a materialized attention's bmm products, nn.GPTConfig.
// SelectiveFLOPs, 4·B·T²·C per GPT block). It upgrades the layer freeing the most
// bytes per extra second until the estimate fits, then runs the step on
// the choice and upgrades (or recomputes offloaded layers, whose prefetch
// window measuring one layer alone does not see) while the measured peak
// is over. Memory: the chosen step's activation peak, measured, ≤ Bytes
// (on cpu the real run's equals the meta plan's byte for byte, tested);
// else a *BudgetError naming the peak with every layer at its most saving
// mode, a budget that works (not always the least one). Time: the table's
// estimate (Table prints layer, mode, bytes kept / recomputed / offloaded
// and est. extra). Rates: DefaultRates (1e11 FLOP/s, 1e10 B/s pointwise
// and copy) on meta and in headroom plan; the examples measure them at
// start with MeasureRates (a 512³ matrix product, a 1 Mi-element tanh GELU
// and add, and a 4 MiB copy to the host and back, about 0.1 s, once per process, on a
// private cpu device so the run's statistics stay its own); --flop-rate,
// --memory-rate and --copy-rate override either.
//
// Knobs and defaults: Sequential's segments (≤ 0: ⌈√n⌉); Budget's byte
// budget (required); Offload's Host (required), Window (0:
// DefaultWindow = 2 layers; < 0: fetch on demand) and Modes (nil: all
// layers but the last offloaded). Checkpointing does nothing when the scope records no
// graph (evaluation, NoGrad).
//
//	loss := model.Head(checkpoint.Sequential(model.Blocks, 0, x))
package checkpoint
