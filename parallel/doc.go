// Package parallel trains one model on several devices: data parallelism
// (DDP) replicates the model and splits the batch; ZeRO shards the
// optimizer state (stage 1) and the gradients (stage 2) across the ranks
// instead of replicating them; offload keeps the optimizer on a host
// device. The trade: communication for memory.
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
//		return nil
//	})
//
// Run aborts the group when a rank fails, so that the others stop at their
// next collective with an *AbortError naming it instead of waiting forever.
//
// # Knobs and defaults
//
//	DDPConfig.Zero        0: every rank holds all model states; 1: optimizer
//	                      state sharded; 2: gradients too (stage 3 is not
//	                      available)
//	DDPConfig.BucketBytes gradient bucket cap; 0: a sixteenth of the
//	                      parameters' bytes, clamped to [64 KiB, 25 MiB]
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
// Under stages 1 and 2 each bucket of u parameter elements is padded to
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
//	offload  the pieces' gradients are copied to the host (F32), the host
//	         updates its F32 masters with the optimizer's state, and the
//	         pieces get the masters back before the all-gather.
//
// NoSync runs the micro-batches of gradient accumulation without reducing
// (the Stepper does this with Sync set); under stage 2 each micro-batch is
// reduce-scattered anyway and added into the shard. Buffers (batch-norm
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
//	offload (1, 2)   as above             0 on the device; on the host
//	                                      12·S optimizer (F32 master, m,
//	                                      v) and 4·S gradient (F32)
//
// (* F16 or BF16 parameters with MasterWeights: F32 master, m and v.)
// With mixed precision (g = 2) that is Rajbhandari et al.'s 2Ψ + 2Ψ + 12Ψ
// (stage 0), 2Ψ + 2Ψ + 12Ψ/N (stage 1) and 2Ψ + 14Ψ/N (stage 2, its
// gradient and optimizer terms) up to the padding; F32 training has
// 8Ψ/N of optimizer state under stage 1. SGD with momentum holds 4
// bytes per element (8 with masters) instead of Adam's 8 (12). The 8·N
// communication bytes are every rank's partial sum for AllSum (an F64 as
// two F32 words each), allocated by stages 1 and 2. "In flight" is the
// stage-2 bucket buffers alive at once: the bucket being filled and the
// one handed over before it, g·(N+1)·(⌈u_k/N⌉ + ⌈u_{k+1}/N⌉) at most for
// consecutive buckets when backward fills them one after the other (a
// chain of layers); a parameter used twice far apart (tied embeddings)
// keeps its bucket alive in between. The collectives themselves allocate
// no device memory. NewDDP holds the parameters twice for a moment (the
// flat buffer is allocated before they move into it): measure after it
// (Device.ResetPeak), as the examples do.
//
// # Communicators
//
// NewGroup is the in-process communicator: ranks are goroutines, each
// usually with its own logical device (cpu.New(rank, …)), and data moves
// through host memory. Reductions add in rank order in F32 (F64 for F64)
// and give every rank the same bits. NewMPI, in builds with the mpi tag,
// runs ranks as processes (docs/MPI.md).
package parallel
