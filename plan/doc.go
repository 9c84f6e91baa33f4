// Package plan predicts a training step's memory before it runs: it runs
// the real step — the same model code, optimizer, techniques and
// data-parallel engine as a training program — on meta devices, which
// allocate exactly what cpu devices do and compute nothing. The result is
// every rank's exact peak bytes by tag, and what each tag held at the
// moment of the peak, for models far larger than the machine (GPT-3 175B
// over 64 ranks plans in seconds); for a model small enough to run, the
// prediction equals the cpu device's measurement byte for byte (Measure).
//
// A plan is for a kind of device (Config.Device): "cpu", the default, or
// "cuda". A cuda device holds one block from the moment it opens, before
// any tensor: cuBLAS's workspace (tag workspace, op cublas, resident),
// 32 MiB on compute capability 9 (H100, H200) and later, 4 MiB before
// (Config.CUDAMajor, default 9). A cuda plan's meta devices allocate the
// same block first, and everything else a cuda device allocates is what a
// cpu device does (the same allocator, the same requests), so the plan of
// a GPU is its measurement: the peak, every tag's and the whole
// device.Stats equal those of the same steps on the emulated cuda device
// (Measure with Device cuda; the package's tests check both examples'
// models plain, with autocast, checkpointing and 4 micro-batches).
//
// Knobs (Config) use the example programs' vocabulary: AMP is --amp
// (autocast: F32 parameters, the forward in 16 bits), AMPParams
// --amp-params (16-bit parameters and gradients, F32 master weights in the
// optimizer, a loss scaler for F16), GradF32 --grad-f32 (with AMPParams:
// F32 gradients, Megatron's main_grad), Checkpoint and CheckpointBudget,
// Accum, Ranks, Zero, Offload, Prune (--prune: the step of the pruned
// model), Optimizer, Device and CUDAMajor. Defaults: the model's batch per rank and
// micro-batch, its context or image size, its optimizer, 2 steps (the
// first makes the optimizer's state, the second is the steady state), the
// cpu device.
//
// ActivationBudget (--activation-budget) picks keep, selective
// recomputation, recomputation or offload per GPT block with
// checkpoint.ModeBudget, each candidate a meta Predict of the same step
// (1 + 3·layers of them, then the verifications); Predict and Measure then
// run the chosen modes, and Prediction.ActivationBudget holds the
// decisions (Table renders them). GPT only, one TP/PP rank; not with
// Selective, OffloadActivations or checkpointing. Its costs use Rates
// (--flop-rate, --memory-rate, --copy-rate; 0: checkpoint.DefaultRates).
// Fit tries "selective" and "activation budget" too: the latter, on a GPT,
// plans each batch under the budget the capacity leaves (the capacity less
// what the plain step holds besides activations at its allocated peak,
// shrunk by the overshoot at most 4 times while the step does not fit).
//
// LoRA (--lora R, --lora-base, --lora-targets, package lora) plans the
// fine-tuning step of rank-R adapters over the frozen GPT as the
// transformer example runs it: the float model is built (its bytes are in
// the parameter peak, as in the example, which loads --init before
// adapting), then lora.Apply freezes it (Int8: quantizes its block Linears
// and frees their float weights) and the optimizer steps the adapters
// alone: gradients 4·Σ_a and AdamW state 8·Σ_a bytes, Σ_a = 16·L·R·C with
// every Linear adapted. One device only; not with amp-params, prune or
// adamw8bit. Predicted equals measured (TestLoRAPredictionEqualsMeasurement).
//
// Under ZeRO stage 3 (Prune is refused with it: pruning reads the whole
// model's weights, which no stage-3 rank holds) the ranks build the model
// as the example programs do (train.Common.ModelBuilder): deferred, each writing
// only its shard (parallel.DDPConfig.Builder), so the prediction includes
// construction — no peak is reset after it — and a Capacity at or above
// the predicted allocated peak fits even when it is below the whole
// model's bytes (TestZero3PlanIncludesConstruction).
//
// The batch is synthetic, zeros made on the device: on meta it has no
// host memory, so a batch of terabytes plans in bounded memory. The loss
// scaler starts at scale 1 so that the F16 step steps on cpu as the meta
// step always does (a meta device sees no overflow); a step that still
// skips is an error. A configuration whose tensors or totals would pass
// MaxBytes (2^62 bytes) on a device is refused (SizeError) rather than
// counted wrong.
//
// StepInBackward plans the optimizer step inside backward as the
// examples' --step-in-backward runs it (a GPT without clipping): the same
// Stepper on meta, so the gradient peak predicted is the largest gradient
// alive at once, byte for byte as on cpu
// (TestStepInBackwardPredictionEqualsMeasurement); its undo copies go to
// the host twin meta:100 (cpu:100 measured), Rank.Host: Σ over the trained
// parameters of their bytes + their optimizer state's, tag optimizer.
// Refused with ranks, ZeRO, tp or pp.
//
// Fit searches batch sizes and technique combinations for the largest
// batch that fits a capacity, cheapest first. It bisects, and trusts only
// the steps it ran: each answer fits and the batch after it does not, and
// the recommendation's target batch is run itself, so a memory that is
// not monotone in the batch cannot make it recommend a batch that does
// not fit.
//
// FitSplit chooses the tensor and pipeline split instead of the
// techniques: for N ranks it plans every layout TP × PP × DP = N that the
// GPT allows (heads divisible by TP, PP ≤ layers) once, at one global
// batch, with the techniques given, and picks the fewest model-parallel
// ranks TP × PP whose target batch fits (each split adds communication),
// then the lowest worst-rank peak, then the smaller TP; it bisects for
// the chosen layout's largest batch only. On gpt2 over 16 ranks (15
// layouts, 11 planned) it answers in about 2 s (fit --split --model gpt2
// --ranks 16 --capacity 4GiB --amp bf16 --zero 1).
//
// # Tensor, pipeline and data parallelism
//
// Config.TP, PP and Ranks (--tp, --pp, --dp) plan a GPT on a mesh of
// Ranks·TP·PP ranks as the transformer example trains it (train.SplitGPT
// over parallel.Mesh: world rank = tp + TP·(dp + DP·pp)). The defaults are
// 1, the 1F1B schedule and Accum micro-batches; under PP the embeddings
// are untied (the last stage holds its own head, as Megatron's copy), and
// under TP a vocabulary that T does not divide is padded to a multiple of
// 128·T. The trade: TP divides every block's weights and, with Sequence,
// its activations by T, at two all-reduces per block; PP divides the
// blocks into P stages, at a bubble of (P−1)/(M+P−1) of the step, stage s
// holding P−s micro-batches' activations under 1F1B (M under GPipe); DP
// with ZeRO 1 or 2 divides the optimizer state (and gradients) of each
// stage by DP. Per rank, with Ψ_r the parameters it holds (Rank.Params),
// F32 AdamW holds 4Ψ_r parameter, 4Ψ_r gradient and 8⌈Ψ_r/DP⌉ optimizer
// bytes under ZeRO 1 (8Ψ_r without); with AMPParams (16-bit parameters
// and gradients, F32 masters and moments sharded) 2Ψ_r + 2Ψ_r + 12Ψ_r/DP,
// 4 + 12/DP bytes per parameter; with GradF32 too (F32 gradients, as
// Megatron keeps them) (2 + 4 + 12/DP)Ψ_r, Megatron's 6 + 12/DP — exactly,
// on every rank of gpt3-175b on TP 8 × PP 16 × DP 8
// (TestSplit175BModelStates: 7.5 bytes per parameter with GradF32). The
// activation gradient a stage receives from the next is workspace. Clipping is by the whole
// model's norm (parallel.MeshOptimizer), F16 gradients loss-scaled. Every
// rank's bytes are the real step's on meta devices; with DP above 1 one
// representative per (tp, pp) coordinate runs for all copies, whose bytes
// are the same (TestRepresentativesEqualFullMesh). Not yet: checkpoint
// budgets and selective recomputation with PP or DP, ZeRO 3, offload.
package plan
