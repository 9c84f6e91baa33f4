// Package train holds what the example programs share and what a Go
// program that trains a model with headroom usually needs around its loop:
// the common command-line flags and their checks, the Stepper, the
// training run itself (Program, Replica, Train: one device or data-parallel
// ranks), a progress display, resumable snapshots, the JSON run report,
// and the exit path that turns an out-of-memory error into its explanation
// instead of a panic trace.
//
// # Flags
//
// Common.Register adds the flags every example shares; Common.Parse reads a
// command line and checks every flag — its range, its combinations with
// the others, that --data and --resume exist and that --save, --report and
// --mem-log go into existing writable folders (tried with a temporary file,
// removed at once) — before any data is read or any model built. A bad
// flag is a *UsageError naming the flag, its value and what it takes.
// NewAdamW makes the examples' --optimizer adamw or adamw8bit, on one
// device or data-parallel.
//
// # Exit codes
//
// ExitCode (and Main, which calls it) gives every program the same exit
// statuses: ExitOK 0; ExitError 1; ExitOOM 3, with the whole
// *device.OOMError explanation on stderr; ExitAlert 4, a --mem-alert that
// stopped the run after saving a resumable snapshot; ExitUsage 64 (BSD's
// EX_USAGE), a bad flag or argument; ExitUnavailable 69 (EX_UNAVAILABLE),
// a --device that cannot be opened (no GPU, driver or CUDA library: a
// *DeviceError naming what is missing). Go's runtime exits with 2 on a
// panic, so 2 means a bug.
//
// # Devices
//
// --device is cpu (the default), cuda or cuda:N; OpenDevice opens it, the
// one place that does, with --mem-limit as its capacity. Data-parallel
// ranks (--ranks N, --zero, --offload) run on cpu:0…cpu:N−1, or with
// --device cuda:K on the GPUs cuda:K…cuda:K+N−1 (--device cuda is cuda:0),
// each of --mem-limit's capacity; --offload's hosts are cpu:100+r. Under
// --mpi (one process per GPU) a process runs on cuda:K+l, l its local
// rank on the node (OMPI_COMM_WORLD_LOCAL_RANK, MPI_LOCALRANKID,
// PMI_LOCAL_RANK or SLURM_LOCALID; else its world rank). More ranks than
// GPUs is a usage error before any work, naming both (Check). Cuda ranks
// in process communicate through NCCL when libnccl loads
// (parallel.NewNCCLGroup), else through parallel.NewGroup, which stages
// their tensors through StageBytes of host memory per rank; under --mpi
// through NCCL with its unique id broadcast over MPI
// (parallel.NewNCCLRank), else over MPI with the GPU's tensors staged
// through the host device cpu:200+r (parallel.HostStaged). The run's
// header says which. A mesh of --tp and --pp (RunMesh) runs in process
// on cpu:0…cpu:N−1, or under --mpi as one process per rank of
// `mpirun -np N` (N = --ranks, the whole mesh) on cpu:l, its Data, Tensor
// and Pipe communicators split from MPI's world (parallel.NewMesh; cuda
// meshes over MPI are not available yet).
//
// On cuda the single-device techniques (--checkpoint, --checkpoint-budget,
// --accum, --prune, --mem-alert) train as on cpu, to the same losses but
// for rounding, and allocate what they allocate on cpu and meta, byte for
// byte, besides the cuBLAS workspace the device holds from Open (32 MiB
// on sm_90, tag workspace): it is part of every step's peak, so the
// capacity and --mem-alert's threshold count it.
//
// # Snapshots and resuming
//
// --save writes a snapshot (SaveSnapshot): the model's and optimizer's
// tensors, the step, the last loss, the loss scaler's and the program's own
// state (its data order, its generators: Replica.SaveState) and the run's
// configuration, the value of every flag but the invocation flags
// (--report, --save, --resume, --override, --stop-after, --mem-log,
// --mem-limit, --mem-alert, --device, --mpi, --checkpoint and
// --checkpoint-budget: checkpointing changes memory, not one bit of the
// result). With --resume, the flags not given take the snapshot's values,
// so --resume FILE alone continues the same run, bit for bit as if it had
// not stopped. A flag given with another value than the snapshot's is
// refused, each change listed with both values, unless --override is given:
// then the changes are printed as a warning and the run continues with
// them (another --steps is another learning rate schedule). The flags that
// change only what follows training — evaluation, samples, --quantize —
// may change freely. A snapshot past the run's last step is refused; one
// at the last step resumes a finished run to evaluate or quantize it,
// with no step trained. The run prints "resumed from step N of M".
//
// Snapshots are safetensors files with a CRC-32C per tensor and of the
// metadata (see package safetensors, Checksums): LoadSnapshot refuses a
// corrupt one, naming the tensor, before it changes the model or the
// optimizer.
//
// A data-parallel run (--ranks, --zero, --offload) saves a sharded
// snapshot (SaveShard): every rank writes its own file — rank 0 the
// --save path itself, rank r "<path>.rank<r>-of-<N>" (ShardPath) — with
// what it holds: every parameter under ZeRO stage 0, its pieces of the
// flat buffer under stages 1–3 ("model.bucket<k>.rank<r>"; under stage 3
// its shard, never the gathered model), the model's buffers, its shard of
// the optimizer state (with offload the host's F32 masters), and its own
// record: step, loss, loss scaler, data order and generators, the run's
// configuration, its layout (parallel.ShardLayout: rank, ranks, stage,
// offload, dtype, buckets) and the save's set number. The save is
// two-phase: each rank writes "<file>.new", the ranks exchange whether
// all succeeded, and only then does each rename its file into place; a
// failure on any rank leaves the old snapshot as it was. --resume path
// takes the configuration from rank 0's file, refuses before any work a
// missing shard and a snapshot of another --ranks, --zero or --offload
// (or a single-device one, and a sharded one on one device), and LoadShard
// refuses another dtype or bucket layout (naming both), shards of
// different saves and a corrupt shard (its CRC-32Cs), before the rank's
// state is written. The resumed run continues bit for bit. ExportModel
// merges a snapshot's shards (or takes a single-device snapshot's model)
// into one model file as nn.Save writes it.
//
// A split run (--tp, --pp, composed meshes) saves a split snapshot
// (SplitGPT.Save): every world rank writes its own file (ShardPath of its
// world rank, of TP·PP·DP) with what it holds — its tensor-parallel
// slices of its stage's parameters (under ZeRO its pieces of the data
// group's flat buffer), its optimizer state — and its record: step, loss,
// loss scaler, sampler and dropout generator, configuration, its layout
// (SplitLayout: world rank, --tp, --pp, --ranks, --zero and its tensors'
// names and shapes) and the save's set number, by the same two-phase
// scheme agreed over the mesh's world (parallel.ExchangeOver). --resume
// refuses before any work a snapshot of another layout (naming both), a
// single-device or data-parallel snapshot, and a missing file; SplitGPT.Load
// then has every rank read and check its file (checksums, layout, tensor
// shapes) and the ranks agree that all are good and of one save before
// any writes its state, so a corrupt or mixed shard is refused on every
// rank, naming it, with nothing changed. The resumed run continues bit for
// bit. ExportModel merges a --pp snapshot's stages (data-parallel copy 0's
// files) into one model file; a snapshot with --tp above 1 or ZeRO pieces
// is refused (merging slices is not available yet), and --init is not
// taken by split runs, so a resume keeps its layout.
// Host scratch: none beyond SaveShard's (the files are written from the
// rank's tensors; the exchange is TP·PP·DP F32 words on the rank's
// device, counted as Communication).
//
// --init FILE starts a run from a model file (nn.Save's, or ExportModel's)
// instead of the seed's initialisation (LoadModel): on one device and
// under ZeRO 0–2 the whole file is read, checksums verified; under ZeRO 3
// each rank reads only its ranges of every parameter (and every buffer),
// and the header says how many bytes of tensor data rank 0 read. With
// --resume it is refused: the snapshot holds the model.
//
// ReadReport reads a run report back and refuses one whose
// numbers no run writes (Report.Check, PeakBytes.Check, CheckStats).
//
// # The optimizer step inside backward
//
// --step-in-backward (Stepper.StepInBackward, off by default) trades a
// host copy of each parameter and its optimizer state for the gradients:
// inside the last micro-batch's backward, as soon as a parameter's
// gradient is complete (autograd.Tensor.OnGradReady, after its last
// contribution), the Stepper unscales it, checks it for inf/NaN (one
// optim.SumSquares: 8 bytes of workspace), updates the parameter
// (optim.ParamStepper.StepParam: SGD, Adam, AdamW, 8-bit AdamW) and frees
// the gradient. PyTorch's equivalent is an optimizer per parameter stepped
// from register_post_accumulate_grad_hook. The result is bit for bit the
// normal step's (same kernels on the same gradients, in F64 and F32 tests).
//
// Memory: the gradient peak falls from Σ all gradients to the largest
// gradient alive at once — one parameter's, plus, for a parameter that
// takes contributions at several points of backward (a tied embedding:
// LM head first, embedding last), its gradient from its first
// contribution to its last. The transformer example (tied, width 32):
// 4·(256·32 + 32·128) = 49152 B against 138752 B. With --accum k the
// first k−1 micro-batches accumulate every gradient as usual (the peak is
// then all gradients); only the last one steps inside backward.
//
// Host: each update keeps its undo until the step ends — a copy of the
// parameter, and of its master copy and state when they exist (not on its
// first step: new state is released instead), byte for byte as stored,
// held as tensors on the Stepper's Host device through its allocator (tag
// optimizer, op step_undo, scope the parameter's name) — so that a step
// the loss scaler skips (a gradient overflowed: the remaining gradients
// are freed unused, the parameters already updated are put back, the
// scale backs off) or a step that fails (out of memory, a non-finite
// gradient without a scaler) changes nothing: a step can never be
// half-applied. The copies grow as parameters step and are all freed when
// the step ends (kept, skipped or failed), so the host's peak is, from the
// second step on,
//
//	Σ over the trained parameters (bytes of the parameter + bytes of its optimizer state)
//
// — AdamW on F32: 12 bytes per element; 8-bit AdamW: 6 per element plus
// 8 per block of a quantised parameter; bf16 parameters with F32 master
// weights: 2 + 4 + 8 — and 0 between steps (TestStepInBackwardUndoHostPeak).
// They are needed without a loss scaler too: a failed update must leave
// the earlier ones undone. The programs open the host cpu:100 (UndoHost,
// no limit; the same index as --offload's host of rank 0), print its peak
// after the memory summary and record it in the report's extra.host; the
// planner allocates the copies on meta:100 and shows the host's peak
// (`headroom plan --step-in-backward`, equal to cpu byte for byte). Each
// copy passes, as every cross-device copy does (autograd's Tensor.CopyFrom),
// through one transient host buffer of at most autograd.TransferChunk (4 MiB).
//
// With data parallelism (--ranks, --zero 0–3) the unit is the DDP's
// gradient bucket (parallel.InBackward): once a bucket's reduction
// completed in the last micro-batch's backward — the all-reduce of stages
// 0 and 1, the reduce-scatter into the shard of stages 2 and 3 — the rank
// unscales and checks its share (stage 0: the bucket's parameters; stages
// 1–3: its piece) and steps it: under stage 3 at once, under stages 0–2 at
// the end of backward (the shares are views of the flat parameter buffer,
// one block whose write counter the saved parameters of every layer still
// in backward check), its undo on cpu:100+rank (Σ over its shares of
// share + state bytes: AdamW in F32, 12·S bytes of the S-element shard).
// The skip decision is collective: a rank whose share overflowed stops
// updating, and the scaler's found-inf is summed over the ranks at the end
// of backward, so every rank skips together and rolls back from its undo
// copies; the all-gather of the updated pieces (stages 1, 2) waits until
// then. The gradient bytes are the DDP's buffers, as without it (stages
// 0, 1: all Ψ′ elements; stages 2, 3: the shard and the buckets in flight):
// the option composes with DP/ZeRO, it does not lower their gradient peak
// (TestStepInBackwardDPPredictionEqualsMeasurement: equal to the plain
// step's on every rank, meta == cpu). Bit for bit the normal DP/ZeRO step in F64,
// with accumulation and with an overflow on one rank only
// (TestStepInBackwardDPBitIdentical, TestStepInBackwardDPOverflowOneRank).
//
// Refused, before any work, naming both flags: --clip (the global norm
// needs every gradient before the first update; the transformer example
// needs --clip 0), --offload (ZeRO-Offload updates on the host after
// backward) and --tp/--pp.
package train
