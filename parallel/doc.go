// Package parallel trains one model on several devices: data parallelism
// (DDP) replicates the model and splits the batch; ZeRO shards the
// optimizer state (stage 1), the gradients (stage 2) and the parameters
// (stage 3) across the ranks instead of replicating them; offload keeps
// the optimizer on a host device. The trade: communication for memory.
//
// # A training loop
//
//	comms := parallel.NewGroup(4)                 // 4 ranks in this process
//	err := parallel.Run(comms, func(c parallel.Communicator) error {
//		dev := cpu.New(c.Rank(), device.Options{Capacity: 8 << 30})
//		model := build(dev)                        // the same on every rank
//		defer nn.Release(model)
//		d, err := parallel.NewDDP(c, model, parallel.DDPConfig{Zero: 2})
//		if err != nil { return err }
//		defer d.Release()
//		opt, err := parallel.NewAdamW(d, optim.AdamConfig{LR: 3e-4})
//		if err != nil { return err }
//		defer opt.Release()
//		st := &train.Stepper{Opt: opt, Sync: d, Accum: 2, Clip: 1}
//		for step := range steps {
//			// forward: this rank's part of the global batch
//			if _, _, err := st.Step(forward); err != nil { return err }
//		}
//		// stage 3: every rank calls d.Unshard() before evaluating or saving
//		return nil
//	})
//
// Run aborts the group when a rank fails, so that the others stop at their
// next collective with an *AbortError naming it instead of waiting forever
// (and, in process, when a rank returns while others still call
// collectives).
//
// # Knobs and defaults
//
//	DDPConfig.Zero        0: every rank holds all model states; 1: optimizer
//	                      state sharded; 2: gradients too; 3: parameters
//	                      too, gathered a bucket at a time when used
//	DDPConfig.BucketBytes gradient bucket cap (under stage 3 also the unit
//	                      of gathering); 0: a sixteenth of the parameters'
//	                      bytes, clamped to [64 KiB, 25 MiB]
//	DDPConfig.Host        nil: no offload; a device: the optimizer state,
//	                      F32 masters and the step live there (needs Zero ≥ 1)
//
// # Flat buffers, buckets and shards
//
// NewDDP moves every trainable parameter into one flat buffer (they become
// views of it) and groups the parameters into buckets of whole layers,
// walking backwards from the last, up to BucketBytes each: bucket 0 is
// filled first by backward. A bucket is reduced as soon as backward has
// added the last contribution to all of its parameters (autograd's
// OnGradReady), by a communication goroutine of the rank, while backward
// goes on with the next bucket; buckets are handed over in bucket order, so
// every rank issues the same collectives in the same order. Backward
// returns when every bucket is reduced. Gradients reach the buckets without
// copies: a parameter's gradient is a view of its bucket's buffer, made at
// its first contribution (autograd's SetGradAlloc).
//
// Under stages 1–3 each bucket of u parameter elements is padded to
// N·⌈u/N⌉ and cut into N pieces of ⌈u/N⌉: rank r owns piece r of every
// bucket, and its shard is the concatenation of its pieces. Sharding per
// bucket (as FSDP shards per flat parameter) is what lets stage 2 reduce
// each bucket with a reduce-scatter in which every rank receives an equal
// piece, and lets the parameters be all-gathered bucket by bucket; a
// rank's shard therefore is Σ_k ⌈u_k/N⌉ elements rather than ⌈Ψ/N⌉ — at
// most N−1 elements more per bucket.
//
//	stage 0  gradients: one buffer per bucket (tag gradient), all-reduced
//	         (average) in place; the optimizer updates every parameter.
//	stage 1  the same gradients; the optimizer updates this rank's pieces
//	         only (its state is a shard), then each bucket of the flat
//	         buffer is all-gathered in place.
//	stage 2  a bucket's full gradient exists only while the bucket is being
//	         filled and reduced: a buffer of (N+1)·⌈u/N⌉ elements (tag
//	         communication), allocated at the bucket's first contribution,
//	         reduce-scattered into its last ⌈u/N⌉ elements, then added into
//	         this rank's shard of the gradients (tag gradient); it is freed
//	         when the next bucket is handed over. The model's parameters
//	         have no gradients after backward: the shard does.
//	stage 3  the flat buffer is never whole: each rank keeps its pieces
//	         (its shard, tag parameter) and the model's parameters have no
//	         storage of their own; gradients as in stage 2; the optimizer
//	         updates the shard and nothing is gathered after the step.
//	offload  the pieces' gradients are copied to the host (F32), the host
//	         updates its F32 masters with the optimizer's state, and the
//	         pieces get the masters back before the all-gather.
//
// NoSync runs the micro-batches of gradient accumulation without reducing
// (the Stepper does this with Sync set); under stages 2 and 3 each
// micro-batch is reduce-scattered anyway and added into the shard. Buffers (batch-norm
// statistics) are broadcast from rank 0 at NewDDP and after every step.
//
// # Memory per rank, exactly
//
// For Ψ parameter elements in buckets of u_k elements, N ranks, g bytes
// per parameter element (4 for F32, 2 for BF16 and F16), Ψ′ = Σ_k N⌈u_k/N⌉
// (the padded flat buffer) and S = Σ_k ⌈u_k/N⌉ = Ψ′/N (the shard), Adam or
// AdamW hold, in bytes, measured by each rank's allocator (Requested):
//
//	                 parameter  gradient  optimizer           communication
//	stage 0          g·Ψ        g·Ψ       8·Ψ (F32), 12·Ψ*    0
//	stage 1          g·Ψ′       g·Ψ′      8·S (F32), 12·S*    8·N
//	stage 2          g·Ψ′       g·S       8·S (F32), 12·S*    8·N + in flight
//	stage 3          g·S        g·S       8·S (F32), 12·S*    8·N + gathered
//	                                                          + in flight
//	offload (1–3)    as above             0 on the device; on the host
//	                                      12·S optimizer (F32 master, m,
//	                                      v) and 4·S gradient (F32)
//
// (* F16 or BF16 parameters with MasterWeights: F32 master, m and v. The
// model's buffers — batch-norm statistics — come on top of the parameter
// column, whole on every rank, at every stage.) The gradient column's g is
// the gradients' dtype, the parameters' GradDType: with F32 main
// gradients of 16-bit parameters (amp.MainGradsF32, --grad-f32) it is 4,
// and the buckets, shards and stage-2 buffers are F32, so the reduction
// runs in F32 — Megatron's 2Ψ + 4Ψ + 12Ψ/N under stage 1 (6 + 12/N bytes
// per parameter). The bucket cap counts gradient bytes.
// With mixed precision (g = 2) that is Rajbhandari et al.'s 2Ψ + 2Ψ + 12Ψ
// (stage 0), 2Ψ + 2Ψ + 12Ψ/N (stage 1), 2Ψ + 14Ψ/N (stage 2, its
// gradient and optimizer terms) and 16Ψ/N (stage 3: 2S + 2S + 12S) up to
// the padding; F32 training has 8Ψ/N of optimizer state under stage 1 and
// 4S + 4S + 8S = 16S under stage 3. SGD with momentum holds 4
// bytes per element (8 with masters) instead of Adam's 8 (12). The 8·N
// communication bytes are every rank's partial sum for AllSum (an F64 as
// two F32 words each), allocated by stages 1–3. "In flight" is the
// stage-2 bucket buffers alive at once: the bucket being filled and the
// one handed over before it, g·(N+1)·(⌈u_k/N⌉ + ⌈u_{k+1}/N⌉) at most for
// consecutive buckets when backward fills them one after the other (a
// chain of layers); a parameter used twice far apart (tied embeddings)
// keeps its bucket alive in between. "Gathered" is stage 3's whole
// parameters of the buckets in use (below). The collectives themselves
// allocate no device memory. NewDDP holds the parameters twice for a
// moment (the flat buffer is allocated before they move into it; under
// stage 3 a bucket at a time: g·(Ψ + S + max_k size_k) at most): measure
// after it (Device.ResetPeak), as the examples do.
//
// # Building a model that does not fit one device
//
// A model built with nn.NewDeferredBuilder has its structure but no
// parameter storage (unbound leaves, each with an nn.Init record of its
// initial values). Given that builder (DDPConfig.Builder), NewDDP writes
// each parameter straight into its place from its record instead of
// broadcasting rank 0's: under stage 3 every rank computes only its own
// pieces (nn.Init produces any element range alone), so construction
// holds the shard, g·S, and never the whole model or a bucket — the
// rank's peak while building is g·S (shard) + g·S (gradient shard) +
// 8·N plus the buffers, and no collective runs. Every rank builds with the
// same seed, and the values equal an unsharded build's bit for bit:
//
//	b := nn.NewDeferredBuilder(dev, dtype.BF16, seed)  // the same seed on every rank
//	model, err := nn.NewGPT(b, "gpt", cfg, gen)         // no parameter bytes yet
//	d, err := parallel.NewDDP(c, model, parallel.DDPConfig{Zero: 3, Builder: b})
//
// Loading weights into such a model reads only the rank's part of the file
// too: DDP.LoadShard reads a safetensors file (nn.Save's) through
// safetensors.Ranges — the header, then of every parameter the elements
// inside this rank's pieces and every buffer whole — into the shard,
// LoadChunk (1 MiB) of host scratch at a time. It verifies every tensor's
// name, shape and dtype first; it cannot verify the tensors' checksums (a
// CRC-32C covers a whole tensor). Call it before making the optimizer.
// LoadShardFrom reads from a file the caller opened, whose Read counts
// the bytes the rank read (train's --init prints it).
//
// # Snapshots of a sharded run
//
// Each rank saves what it holds, never more: its pieces (the optimizer's
// Params: views of the flat buffer, under stage 3 of the shard, so no
// bucket is gathered to save), the buffers, and the optimizer's State
// (its shard; with offload the host's masters). ShardLayout records the
// rank's layout (ranks, stage, offload, dtype, buckets) so that a shard
// is loaded only into the same layout. Loading writes the pieces in place
// (and the state through Optimizer.Load); Optimizer.Gather then makes the
// parameters whole again under stages 1 and 2 (the all-gather that
// follows a step) and frees anything gathered under stage 3. Exchange is
// the small collective (Size F32 words, tag communication) with which the
// ranks agree on a save: a common set number first, then whether every
// rank wrote its file. train.SaveShard and train.LoadShard are the file
// format (package train's documentation).
//
// # Stage 3: parameters gathered when used
//
// The model's parameters stay the same leaves (modules, the graph and the
// hooks hold them), but without storage (autograd's Tensor.Unbind): using
// one runs its fetch function (Tensor.SetFetch), which all-gathers its
// bucket into a buffer of size_k = N·⌈u_k/N⌉ elements (tag communication)
// and binds every parameter of the bucket to a view of it (Tensor.Bind) —
// no change to the model, to nn or to the training loop, and it works for
// any model, on meta devices too. A bucket holds whole layers, so the
// bucket is the unit of gathering. The lifetime of a gathered bucket:
//
//	one       at most one bucket is gathered at any time: gathering one
//	          first frees the one gathered before (the layers of a bucket
//	          run one after the other, forward and backward).
//	saving    an op that saves a parameter for backward (Linear, Conv2d
//	          and the norms save their weight) saves a reference to it
//	          (the leaf's Tensor.SetSavedHooks) instead of its storage, so
//	          nothing pins a freed bucket; the bucket counts them.
//	backward  the first backward step that reads a reference gathers the
//	          bucket again; the bucket is freed when its last reference
//	          has been freed (its layers' backward steps have run), or
//	          when another bucket is gathered.
//	step      whatever is still gathered is freed before the update (it
//	          would be out of date); nothing is gathered after it.
//
// A bucket whose layers saved no weight (the first layer's, whose input
// needs no gradient) is not gathered in backward; a bucket used again far
// apart (a tied embedding, a shared block) is gathered again. Every
// collective of a rank — gathers inside backward included — goes through
// its communication goroutine in the order the training goroutine asks
// for them, so all ranks agree on the order. With activation
// checkpointing a checkpointed segment's forward frees its bucket when it
// ends, and its recomputation gathers buckets like a forward: the results
// equal those without checkpointing, at the price of the extra gathers.
//
// So, per rank: the parameter tag holds g·S; the communication tag holds
// 8·N, at most one gathered bucket, g·size_k = g·N·⌈u_k/N⌉, and stage 2's
// gradient buckets in flight:
//
//	forward   8·N + g·N·max_k piece_k
//	step      ≤ 8·N + g·N·max_k piece_k + in flight
//
// with piece_k = ⌈u_k/N⌉ (the forward's peak is exact when every bucket
// is used and no view of a parameter outlives its op's layer). In backward the gathered bucket and its own
// gradient buffer coexist while the bucket's later layers have produced
// gradients and its earlier ones still read weights; for layers each in a
// bucket of its own, run one after the other (a chain: each layer's
// backward reads its weight, then produces its gradient) the gathered
// bucket is freed first, and the step's peak is exactly stage 2's,
//
//	8·N + g·(N+1)·max_k≥1 (piece_{k−1} + piece_k)   (K ≥ 2 buckets, in
//	8·N + g·(N+1)·piece_0                            backward's order;
//	                                                 K = 1)
//
// since bucket k's gathered N·piece_k, beside bucket k−1's gradients in
// flight, is less than its own (N+1)·piece_k that follow
// (TestStage3GathersOneBucketAtATime checks both peaks to the byte).
//
// Autocast of F32 parameters (--amp without --amp-params) casts each
// parameter once per step at stages 0–2 and keeps the 16-bit casts of
// the whole model (2Ψ bytes, tag parameter) for the step. At stage 3 a
// cast lives with its bucket (FSDP's param_dtype): it is freed when the
// bucket's parameters are unbound, made again from the gathered values
// when a later op of the step uses the parameter, and an op that saves it
// for backward saves the parameter's reference instead, backward casting
// again from the bucket it gathers. A rank's parameter tag then peaks at
// its shard plus 2 bytes per element of one bucket's parameters, and the
// losses and parameters are stage 2's bit for bit
// (TestStage3AutocastHoldsOneBucketOfCasts).
//
// Limits. An op that saves a view of a parameter rather than the
// parameter (MatMul(x, w.T()) in a user's own layer) pins the gathered
// buffer until its backward step. Writing
// a parameter's values (CopyFrom, Fill) changes the gathered copy only.
// An op must not take parameters of two buckets (a layer's parameters
// always share one). To read, evaluate or save the whole model, every
// rank calls Unshard (Ψ′ elements, tag communication, until Reshard or
// the next step); a forward run by one rank alone would wait for the
// others' gathers. The model is built whole on every rank before NewDDP
// shards it.
//
// # The optimizer step inside backward
//
// Optimizer.InBackward (train.Stepper.StepInBackward, --step-in-backward
// with --ranks/--zero) steps each gradient bucket's share — stage 0 the
// bucket's parameters, stages 1–3 the rank's piece — once the bucket's
// reduction has completed in the last micro-batch's backward: under stage
// 3 as each reduce-scatter completes (the piece is a view of the shard,
// which backward reads only through gathered buffers), under stages 0–2
// at the end of backward (the pieces are views of the flat buffer, one
// block whose write counter every saved parameter checks). Each update
// keeps an undo copy of the share and its state on the given host
// (Σ over the shares of share + state bytes; AdamW on F32: 12·S for a
// shard of S elements after the first step). A share that is not finite
// stops the rank's updates; InBackward.Rest's optimizer, whose Params are
// that gradient alone and whose AllSum adds over the ranks, lets the
// scaler find the overflow on every rank, and every rank rolls back
// (Rollback); a kept step gathers the updated pieces (stages 1, 2) only
// then. The gradients stay in the DDP's buffers: the option does not
// change a rank's gradient bytes. Not with offload.
//
// # Communicators
//
// NewGroup is the in-process communicator: ranks are goroutines, each
// usually with its own device (cpu.New(rank, …), or the GPU cuda:rank),
// and data moves through host memory. Reductions add in rank order in F32
// (F64 for F64) and give every rank the same bits. A cpu rank's tensors
// are read and written in place; a cuda rank's are staged through the
// host with the device's Read and Write, in rounds of at most StageBytes
// (4 MiB) per rank: a Go slice made at the rank's first such collective,
// outside every allocator, and kept by the communicator — the
// collectives allocate no device memory either way, so the table above
// holds for cuda ranks too, plus each cuda device's own cuBLAS workspace
// block (tag workspace). cpu and cuda ranks may be mixed in one group
// (not meta with either). It is the fallback for GPUs without NCCL and
// the reference NCCL is tested against. With offload on cuda ranks the
// pieces' gradients go to the host and the masters come back through
// the device's Read and Write (host copies of a piece's size, the
// autograd transfer's). A staged Read waits for all the work queued on
// the device so far, so without NCCL a bucket's reduction overlaps
// backward less on cuda ranks than on cpu ranks. NewMPI, in builds with
// the mpi tag, runs ranks as processes (docs/MPI.md); its tensors must be
// host memory: HostStaged wraps it (or any host-only communicator) for
// cuda tensors, in rounds of at most StageBytes through host tensors on a
// host device (tag communication).
//
// NewNCCLGroup(devs) is the NCCL communicator for ranks that are cuda
// devices of this process, one rank per GPU (the unique id is passed in
// process); NewNCCLRank(world, dev) makes one rank per process, rank 0's
// unique id broadcast over world (the MPI communicator, say). libnccl.so.2
// is loaded at the first call (HEADROOM_LIBNCCL names a path; ErrNoNCCL
// when it is missing). Tensors must be contiguous, F32, F16, BF16 or F64,
// on the rank's device (else an error naming the op, before any work). A
// collective runs on the device's communication stream, a second stream
// ordered after the kernels queued before the call by an event; the
// calling goroutine waits on the host for the collective's end, while the
// device's worker and compute stream go on — so DDP's bucketed all-reduce,
// made from its own goroutine as buckets fill, overlaps backward. NCCL's
// own device buffers (measured as the driver's used bytes after the
// initialisation less before; NCCL_RUNTIME_CONNECT is set to 0 unless the
// environment sets it, so that NCCL 2.22+ allocates them all then rather
// than at the first collective) are counted on the device as one resident
// record tagged communication (op "nccl", device.Hold), with the 4-byte
// F32 that Barrier all-reduces: Summary and OOM reports show them and the
// capacity leaves room for them. Abort calls ncclCommAbort on every rank
// of this process (ranks in other processes see NCCL's remote error).
// Close frees a rank's communicator and its record. Reductions are
// NCCL's (its rank order and accumulation are its own on a GPU; the
// emulator's fake NCCL reduces as NewGroup does, bit for bit: there the
// DDP engine, every stage and offload run on NCCL unchanged and give the
// in-process group's results bit for bit, as the tests check).
//
// # Tensor parallelism
//
// NewTensorGPT splits one nn.GPT across the t ranks of a communicator
// (Shoeybi et al. 2019, Megatron-LM): each block's attention heads and
// MLP hidden features, and the vocabulary of the token embedding and the
// LM head, are divided t ways, so the split layers' parameters, gradients
// and optimizer state on each rank are 1/t of the model's. Every rank
// runs the same Forward on the same batch and gets the same loss:
//
//	comms := parallel.NewGroup(4)
//	err := parallel.Run(comms, func(c parallel.Communicator) error {
//		dev := cpu.New(c.Rank(), device.Options{})
//		b := nn.NewBuilder(dev, dtype.F32, seed)     // the same seed on every rank
//		gen := autograd.NewGenerator(dropSeed)       // the same generator state too
//		g, err := parallel.NewTensorGPT(b, "gpt", cfg, c, gen, parallel.TensorOptions{Sequence: true})
//		if err != nil { return err }
//		defer nn.Release(g)
//		opt, err := optim.NewAdamW(g.Params(), optim.AdamConfig{LR: 3e-4})
//		…
//		s := autograd.NewScope()
//		err = s.Run(func() error { return g.Loss(g.Forward(idx), targets, autograd.CEOptions{}).Backward() })
//		…                                            // then opt.Step(), nn.ZeroGrad(g)
//	})
//
// The pieces, usable on their own: Copy (f: identity forward, all-reduce
// backward) and Reduce (g: all-reduce forward, identity backward) enter
// and leave a region; ColumnLinear holds its rank's output features (rows
// of W) and RowLinear its input features (columns of W), so that column
// then row needs one Reduce in forward and one Copy in backward per pair
// (attention: c_attn split by heads, each rank attends over its own heads
// with nn.Attend; MLP: c_fc, GELU, c_proj). VocabEmbedding looks up only
// its rows (the others read as 0) and Reduce sums. CrossEntropy takes
// each rank's logits (N, V/t): the row maxima are all-gathered (N values
// per rank), Σ exp, the target's logit and, with label smoothing, Σ
// logits are reduced, so no rank holds the whole (N, V) logits; backward
// communicates nothing. Label smoothing, the ignore index and the
// reductions are autograd.CrossEntropy's. TensorGPT.RunBlocks takes
// activation checkpointing (a recomputed block repeats its collectives).
//
// Sequence parallelism (TensorOptions.Sequence, off by default; Korthikanti
// et al. 2022) shards what lies between the regions — LayerNorms,
// dropouts, residual adds, the embeddings' sum, ln_f — by rows of the
// flattened (N, C) activations, N = B·T: rank r holds rows [r·N/t,
// (r+1)·N/t) (N must divide by t). A region is entered by GatherLinear
// (all-gather, then the column-parallel product; only this rank's rows are
// saved, backward all-gathers them again for the weight's gradient and
// reduce-scatters the input's) and left by Scatter (reduce-scatter;
// backward all-gathers). The whole parameters used on a rank's rows (the
// LayerNorms, the row-parallel biases, the position table) enter by Copy,
// so their gradients are summed across the ranks in backward and every
// rank's copy stays the same.
//
// Same model, same seed. A split parameter holds exactly its elements of
// the unsplit one (nn.Init produces any element range: a column shard is
// one range, or three for q, k, v; each row of a row-parallel shard is a
// range of its own): every rank's initial parameters are those of
// nn.NewGPT with the same builder seed, bit for bit. The dropout masks
// are the unsplit model's for the same generator state: without sequence
// parallelism every rank draws the whole tensor's mask; with it each rank
// draws its rows' positions of the same stream and leaves the generator
// where the whole draw would (a recomputation replays the recorded draw).
// Caveat: autograd.RewindRNG of a step's log puts rank r > 0 at its own
// rows' position, not at the step's start; restore a Generator.State
// saved before the step instead.
//
// Which results are the same bits as one device (F64; tested): the
// column-parallel outputs and weight gradients, the row-parallel weight
// and input gradients, the embedding and its gradient — each element is
// the same dot product in the same order. Where the ranks' partial sums
// are added (row-parallel outputs, column-parallel input gradients, the
// cross-entropy's sums, the sequence-sharded parameters' gradients) the
// order differs: 20 AdamW steps of a 2-layer GPT give losses within
// 3.5e-16 relative of one device's in F64 and 1.3e-7 in F32, t = 2 and 4,
// with and without sequence parallelism (go test ./parallel -run
// TestTensorParallel).
//
// Communication per training step, L blocks, s bytes per element: without
// sequence parallelism, forward 1 + 2L all-reduces of N·C·s (the
// embedding, each block's two regions) and 3 of N elements (the
// cross-entropy; 4 with label smoothing), backward 2L + 1 all-reduces of
// N·C·s (Copy's): 13 collectives a step for L = 2. With it, forward
// 2L + 1 reduce-scatters and 2L + 1 all-gathers of N·C·s in all (a ring
// all-reduce is one of each: the same bytes) and the cross-entropy's 3;
// backward as many, plus 2L + 1 all-gathers of GatherLinear's saved rows
// (1.5× the bytes of backward), plus one all-reduce per whole parameter
// used on the rows (2 per LayerNorm and each c_proj bias, C elements; the
// position table, Context·C): 4L + 5 collectives forward and 12L + 6
// backward, 43 for L = 2 (TestTensorParallelFailingRankStopsEveryRank
// counts them).
//
// Memory per rank, exactly (TestTensorParallelModelStatesPerRank and
// TestTensorParallelActivationsPerLayer measure it with the allocator).
// Model states: with Ψ_s the split parameters' elements (the tables,
// c_attn, c_fc and the c_proj weights: V·C, twice untied, + L·(12·C² +
// 7·C with biases)) and Ψ_w the whole ones' (the position table, the
// LayerNorms, the c_proj biases), each rank holds s·(Ψ_s/t + Ψ_w) of
// parameters, as much gradient and 2·s·(Ψ_s/t + Ψ_w) of AdamW state (F32
// or F64 parameters). Activations one block leaves for backward (with its
// result), for a batch (B, T), H heads, cs the statistics' size (4, 8 for
// F64):
//
//	one device (nn.GPTBlock)     17·N·C·s + 4·N·cs + B·H·T·cs
//	tensor parallel              (4 + 13/t)·N·C·s + 4·N·cs + B·(H/t)·T·cs
//	tensor + sequence parallel   (17·N·C·s + 4·N·cs + B·H·T·cs)/t
//
// less N·C·s/t when each rank holds one head (attention's output back in
// (B, T, C/t) layout is then a view). The 4 are ln_1's output (c_attn's
// input), the residual sum (ln_2's input), ln_2's output (c_fc's input)
// and the result, whole on every rank; the 13/t are q, k, v (3),
// attention's output and c_proj's input (2) and the MLP's two 4·C-wide
// tensors (8). Korthikanti et al.'s Table 2 — sbh(34 + 5as/h),
// sbh(10 + 24/t + 5as/(ht)) and sbh(34 + 5as/h)/t, their s, b, h, a our
// T, B, C, H — counts bytes of 2-byte activations with the attention
// scores stored: their 5as/h is the scores, the softmax and its dropout
// mask (the fused attention here keeps only the log-sum-exp, B·H·T·cs,
// and its output, one of the 13); their 10 is the same four tensors at 2
// bytes and two 1-byte dropout masks (regenerated from the seed here: 0
// bytes); their 24 is q, k, v, c_proj's input and the MLP's 8·C at 2
// bytes. Sequence parallelism divides everything by t because
// GatherLinear saves its rank's rows rather than the gathered input
// (saving the gathered input would add 2·N·C·s per block; the trade is an
// all-gather more per region in backward). Inside forward the gathered
// input and the row-parallel partial sums (N·C·s each) live for a moment.
//
// Host memory: VocabEmbedding and CrossEntropy read the indices and
// targets to the host (8 bytes a token) and build their local indices and
// masks there (16 and 24 bytes a token, Go heap), sequence parallelism
// the position indices (8 bytes a row of the rank): bounded by the batch,
// garbage once the step's forward is built. The collectives allocate no
// device memory (in process).
//
// Limits: the heads and the vocabulary must divide by t (no vocabulary
// padding); ShareLayers is not supported; a deferred builder's split
// parameters are materialised at once (their records describe the whole
// tensor: do not pass that builder to NewDDP); tensor and data parallelism
// are not yet combined (one communicator: the tensor-parallel group); the
// small gradient all-reduces of sequence parallelism are not bucketed. A
// rank that fails stops the others at their next collective (Run's
// Abort), in forward or backward.
//
// # Pipeline parallelism
//
// NewPipe cuts a GPT (nn.GPT: embeddings, blocks, final LayerNorm and LM
// head) into P stages of contiguous blocks, one per rank of the
// communicator (its Size is P): stage 0 also runs the embeddings, stage
// P−1 the final norm, the head and the loss. Each rank builds the same
// model with the same seed — with nn.NewDeferredBuilder only its own
// stage's parameters get storage — and trains its stage's parameters
// (Pipe.Params) with its own optimizer:
//
//	err := parallel.Run(parallel.NewGroup(4), func(c parallel.Communicator) error {
//		dev := cpu.New(c.Rank(), device.Options{})
//		g, err := nn.NewGPT(nn.NewDeferredBuilder(dev, dtype.F32, seed), "gpt", cfg, nil)
//		if err != nil { return err }
//		p, err := parallel.NewPipe(c, g, parallel.PipeConfig{MicroBatches: 8, Batch: 4, Seq: 256})
//		if err != nil { return err }
//		opt, err := optim.NewAdamW(p.Params(), optim.AdamConfig{LR: 3e-4})
//		if err != nil { return err }
//		for step := range steps {
//			loss, err := p.Step(parallel.PipeBatch{Tokens: tokens, Loss: loss})
//			if err != nil { return err }
//			if err := opt.Step(); err != nil { return err }
//			opt.ZeroGrad()
//		}
//		return nil
//	})
//
// The trade: a stage holds 1/P of the blocks' parameters, gradients and
// optimizer state (the embeddings stay on stage 0, the head on stage
// P−1), and the activations of a few micro-batches of its own blocks;
// the price is the bubble, the fraction (P−1)/(M+P−1) of a step each
// stage idles while the pipeline fills and drains (PipeStats.Bubble;
// 3/11 for P = 4, M = 8), and per step 2·M point-to-point transfers of
// B·T·C elements across each stage boundary (an activation forward, its
// gradient back).
//
//	PipeConfig.Schedule  OneFOneB (default) or GPipe
//	PipeConfig.Split     blocks per stage; nil: DefaultSplit, ⌊L/P⌋ each,
//	                     the L mod P left over one each to stages 1, 2, …
//	                     (never stage 0, which holds the most micro-batches)
//
// Schedules, the order of each stage's passes (Fi: forward of
// micro-batch i, Bi: its backward), P = 3, M = 4:
//
//	1F1B     stage 0  F0 F1 F2 B0 F3 B1 B2 B3
//	         stage 1  F0 F1 B0 F2 B1 F3 B2 B3
//	         stage 2  F0 B0 F1 B1 F2 B2 F3 B3
//	GPipe    stage s  F0 F1 F2 F3 B0 B1 B2 B3
//
// Under 1F1B stage s runs min(P−s−1, M) forwards (warm-up), then one
// forward and one backward at a time, then the backwards left
// (cool-down). Backwards run in micro-batch order under both schedules,
// so that each gradient adds the micro-batches' contributions in the
// order one device with accumulation does. A send followed by a receive
// from the same neighbour is one SendRecv (Megatron-LM's
// send_forward_recv_backward and send_backward_recv_forward): two
// neighbours that send to each other at once do not wait on each other.
//
// Memory. One micro-batch (B, T) leaves on a stage of k blocks, until its
// backward, act = in + k·(17·B·T·C·s + 4·B·T·cs + B·H·T·cs) bytes
// (StageActivationBytes; s the dtype's size, cs the statistics' 4, or 8
// for F64; in = 8·B·T + B·T·C·s on stage 0 — the token indices and the
// embeddings — and B·T·C·s, the received activation, after it; no
// dropout). 1F1B keeps at most P−s micro-batches alive on stage s — P on
// the first — and GPipe M on every stage: (P−s)·act against M·act bytes
// (PipeStats.InFlight and Held measure both). TestPipeMemory (4 blocks of
// width 16, 2 heads, B = 2, T = 8, F32; P = 4, M = 8) measures on stage 0
// act = 18,944 B, held 4 × 18,944 = 75,776 B under 1F1B and 8 × 18,944 =
// 151,552 B under GPipe — the closed form to the byte on stages 0–2 —
// and activation peaks of 76,800 B and 152,576 B, (M−P)·act apart. The
// last stage's backward follows each forward, so it holds one
// micro-batch under 1F1B (its logits, B·T·V·s, among them). The gradient
// received for a stage's output is allocated before its backward (tag
// workspace, B·T·C·s: an activation gradient, as the allocator's tags
// count them, not a parameter's) and the input's gradient it sends back is freed
// once sent; the loss is broadcast from the last stage in one F64 (tag
// communication, 8 bytes). Transfers borrow no device memory: the
// in-process group copies from the sender's host memory into the
// receiver's (a cuda sender's rounds go through its StageBytes staging
// slice), MPI sends and receives the tensors' bytes in place.
//
// Exactness. A stage runs the same ops on the same values as one device
// would (GPTLayers.Embed, Body and Out are GPT.Forward's parts); the
// received activation enters the graph as a leaf (Scope.LeafOf) whose
// gradient adds the same two contributions (the residual's and ln_1's) as
// the one-device graph adds, and the last stage scales each loss by 1/M
// before its backward as train.Stepper does. The losses and parameters of
// 20 AdamW steps on 1, 2 and 4 stages equal one device's with Stepper
// Accum M bit for bit, in F64 and in F32, under both schedules
// (TestPipeMatchesOneDevice), and under MPI for 2 stages
// (TestMPIPipeRanks). That needs every stage on the same kind of device
// (the same kernels) and dropout 0 (each rank's generator draws its own
// masks). Clipping by the global norm goes through Pipe.Optimizer, whose
// AllSum all-reduces the stages' sums of squares (one F64 per step):
// optim.ClipGradNormOf(p.Optimizer(opt), clip). The stages' partial sums
// associate differently from one device's, so the clipped run is not bit
// for bit: TestPipeClipping (every step clipped, 20 steps) measures
// parameters within 4.4e-11 relative of one device's in F64 and equal in
// F32. Tied embeddings and shared layers, whose parameters would span
// stages, are refused.
//
// Transfers and failures. PointToPoint (Send, Recv, SendRecv) is an
// optional interface. The in-process group implements it for cpu tensors
// (the receiver copies from the sender's memory) and cuda tensors (the
// sender reads rounds of at most StageBytes into its staging slice, the
// one its collectives use, and the receiver writes each to its device):
// TestPipeOnCudaRanks trains 2 stages on the two emulated GPUs, bit for
// bit one emulated GPU's run. MPI implements it for host tensors
// (MPI_Isend and MPI_Irecv of the bytes, polled every 100 µs at most),
// and HostStaged over it for cuda tensors, in rounds of at most
// StageBytes through a host tensor per side (tag communication, freed
// when the call returns; TestHostStagedPipeOnTwoGPUs runs the pipeline so
// over the in-process group, bit for bit); NCCL does not yet, and
// NewPipe says so. A stage that fails makes every other stage fail within a
// bounded time: in process Run aborts the group and a pending transfer
// returns the *AbortError; under MPI the failing rank's Abort sends every
// rank a notice message, on which a rank waiting in a transfer gives it up
// and joins the collective header that settles the abort (a rank in a
// collective is there already). Step ends with the loss broadcast, a
// collective, so no stage finishes a step that another has failed.
//
// # Composition: data × tensor × pipeline
//
// A mesh arranges Data·Tensor·Pipe ranks as Data replicas of a model cut
// into Pipe pipeline stages whose blocks are split Tensor ways (MeshShape,
// Mesh). World rank r has coordinates tensor = r mod Tensor, data =
// ⌊r/Tensor⌋ mod Data, pipe = ⌊r/(Tensor·Data)⌋, i.e. r = tensor +
// Tensor·(data + Data·pipe) (MeshShape.Rank, Coords): Megatron-LM's
// order, tensor fastest, so that a tensor group — which communicates in
// every layer — is consecutive ranks (one machine's devices when Tensor
// divides them), then data, and pipeline groups, which send the least,
// span the farthest ranks. Each rank gets four communicators: World,
// Tensor (the ranks sharing its data and pipe coordinates), Data (sharing
// tensor and pipe) and Pipe (sharing data and tensor), each ranked by its
// own coordinate. In process NewMeshGroup makes every rank's mesh (the
// sub-groups are in-process groups) and RunMesh runs them; over MPI
// NewMesh splits the world (MPI.Split, MPI_Comm_split, which needs
// MPI_THREAD_MULTIPLE). A mesh is one failure domain: an Abort of any of
// its communicators fails every pending and future collective and
// transfer of all of them on every rank (in process: every sub-group gets
// the *AbortError naming the world rank; under MPI each of the process's
// communicators joins one abort header of its own, and a rank that learns
// of an abort through one aborts the others). TestMeshFailingRank (each
// rank of a 2×2×2 mesh failing in turn while the others run collectives
// on all three groups and transfers between stages) and TestMPIMeshRanks
// check it.
//
// A rank trains: its model (nn.NewGPT, or NewTensorGPT over Mesh.Tensor,
// built with a deferred builder and the same seed everywhere); its stage
// (NewPipe, or NewTensorPipe, over Mesh.Pipe; NewTensorPipe releases the
// other stages' shards, so a rank keeps only its stage's); NewDDP over
// Mesh.Data with the Pipe as the module (a Pipe is an nn.Module of its
// stage's parameters) at any ZeRO stage; Pipe.SyncWith(ddp), which runs
// every micro-batch's backward but the last under NoSync, so that the
// data group reduces each bucket once per step (TestMeshReducesOncePerStep);
// and NewAdamW(ddp, …). Gradient accumulation is the pipeline's M
// micro-batches: a step sees Data·M micro-batches in all, data rank d
// taking its own M. Checkpointing plugs in as RunBlocks of the model (a
// stage runs its blocks through it). Defaults: MeshShape has none (every
// size must be ≥ 1; 1×1×1 is one device); the split of blocks over stages
// is DefaultSplit, the schedule 1F1B, ZeRO the DDPConfig's.
//
// Exactness: TestMeshMatchesOneDevice trains 20 AdamW steps on DP2×TP2,
// DP2×PP2, TP2×PP2 and DP2×TP2×PP2 (ZeRO-1) against one device
// accumulating the same Data·M micro-batches. Not bit for bit: the data
// mean adds the ranks' sums ((g₀+g₁)/2, against one device's running sum
// of g/(Data·M)) and tensor-parallel row outputs add partial sums. F64
// losses within 1.7e-15 and parameters 8.8e-13 (relative to max(|w|,
// 0.02)); F32 losses 7.4e-8, parameters 4.3e-5. The keys' part of c_attn's
// bias is left out: its gradient is zero in exact arithmetic, so its value
// is rounding noise that Adam amplifies differently in every run. With
// one data and one tensor rank the pipeline alone is bit for bit
// (TestPipeMatchesOneDevice, and TestMPIMeshRanks's PP2 mesh).
// TestMeshMatchesOneDeviceFourWay does the same for DP2×TP4 and DP2×PP4
// (8 ranks, ZeRO-1, 4 heads, one block per stage): F64 losses within
// 3.7e-16 and parameters 2e-13; F32 losses 3e-8, parameters 3.9e-5.
//
// Memory: each rank holds its stage's share Ψ_rank of the parameters —
// the stage's whole parameters (LayerNorms, wpe, row-parallel biases) and
// 1/Tensor of its split ones — and under ZeRO-1 the optimizer state of
// 1/Data of them. With F32 parameters, gradients and AdamW moments that is
// (4 + 4 + 8/Data)·Ψ_rank bytes (TestMeshModelStatesPerRank: allocator
// bytes by tag after the first step, exact on 2×2×1, 2×1×2, 2×2×2 and
// 1×2×2, buckets unpadded). With BF16 parameters and F32 masters
// (AdamConfig.MasterWeights) the masters and both moments are sharded:
// (2 + 2 + 12/Data)·Ψ_rank — Megatron's distributed optimizer counts
// 6 + 12/Data because it keeps F32 gradients; here gradients are in the
// parameters' dtype (TestMeshModelStatesPerRank measures this form too).
//
// Global-norm clipping and loss scaling over a mesh: MeshOptimizer wraps
// a rank's optimizer (the DDP's under Data > 1) as an optim.Sharded
// whose AllSum is one F64 all-reduce over World (8 bytes of tag
// communication, freed at once) and whose Step clips by the whole model's
// norm before stepping,
//
//	‖g‖² = Σ_ranks ( own_r + [tensor rank 0]·rep_r ) · [data rank 0 or ZeRO ≥ 1]
//
// where own_r is the sum of squares of the rank's gradients of the
// parameters it holds alone (its tensor-parallel shards; under ZeRO its
// pieces of the flat buffer, cut at the parameters' bounds) and rep_r of
// those its tensor group replicates (TensorGPT.Replicated: wpe, the
// LayerNorms, the row-parallel biases), counted on tensor rank 0 only;
// the data-parallel copies' reduced gradients are the same under ZeRO 0,
// counted on data rank 0 only, and under ZeRO 1–2 each copy adds its
// pieces. The factor is ClipGradNorm's, clip/(‖g‖ + 1e-6) when below 1.
// TestMeshClipMatchesOneDevice (F64, clip 0.05 binding every step, 6
// AdamW steps): TP2 (± sequence parallelism), PP2, DP2×TP2 (ZeRO 0),
// DP2×TP2×PP2 (ZeRO 1, and ZeRO 2 with sequence parallelism) give
// every rank one device's norm within 1.2e-13 relative, the losses
// within 1e-15 and the parameters within 6e-14 (TP, PP) and 1.4e-12
// (DP: the data mean's association, clipping or not). An amp.Scaler over
// a MeshOptimizer adds the ranks' found-inf flags over World (the same
// all-reduce): every rank skips an overflowed step, its parameters and
// optimizer state unchanged, and all keep one scale; Pipe.Step scales
// the losses by PipeBatch.Scale. TestMeshLossScaling (F16 autocast on
// DP2×TP2×PP2 ZeRO-1 and TP2×PP2) measures the losses within 4.9e-4 and
// 6.9e-5 relative of one device's scaled run, the same scale on every
// rank, and an infinity forced into one rank's gradients making all of
// them skip that step and halve the scale.
//
// Not yet: NCCL meshes (no point-to-point); dropout masks that match one
// device across stages.
package parallel
