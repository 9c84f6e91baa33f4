// Command headroom plans, fits, benchmarks and explains the memory of
// training steps.
//
//	headroom plan --model gpt-7.5b --ranks 64 --zero 3 --amp fp16 --amp-params   # exact bytes per rank, before running
//	headroom fit --model gpt2 --capacity 24GiB                                      # largest batch, cheapest techniques
//	headroom fit --split --model gpt2-xl --ranks 16 --capacity 8GiB --amp --checkpoint # the tp × pp × dp layout that fits
//	headroom bench --quick --out bench-results                                      # every technique for real on the CPU
//	headroom summary report.json                                                    # a run report, timeline or bench.json
//	headroom export z.safetensors model.safetensors                                 # a snapshot's model, its shards merged
//
// The flags mean what they mean in the example programs: --amp bf16|fp16
// is autocast (f32 parameters, the forward in 16 bits); --amp-params adds
// 16-bit parameters and gradients with f32 master weights and optimizer
// state (mixed precision as the ZeRO paper counts it; fp16 adds a loss
// scaler); --checkpoint, --checkpoint-budget, --accum, --ranks, --zero,
// --offload and --prune likewise.
//
// plan runs the model's real training step on meta devices (package plan)
// and prints what each tag held at the moment of the peak (the columns add
// up to the peak), then each tag's own peak (reached at other moments;
// they need not add up). The JSON (--json) has model, params, peak_bytes
// (the largest rank's) and ranks, each with rank, device, peak_bytes,
// model_state_bytes, parameter_bytes, gradient_bytes, optimizer_bytes,
// activation_bytes, workspace_bytes, communication_bytes, other_bytes
// (the own peaks), at_peak (the same fields at the moment of the peak)
// and, with --offload, host (the host's own peaks). Without --batch, each
// rank's micro-batch is the model's default batch. Sizes whose tensors
// would pass 2^62 bytes are refused, naming the flag. --device cuda plans
// for a GPU without needing one: each device first holds cuBLAS's
// workspace (32 MiB with --cuda-major 9, the default: H100, H200; 4 MiB
// before sm_90), as device/cuda allocates it at Open, so the plan equals
// the GPU's accounting byte for byte; the table's second line and the
// JSON's device, cuda_major and resident_bytes say which device it is for.
//
//	headroom plan --model small --device cuda --amp --checkpoint  # what examples/resnet --device cuda --amp --checkpoint will peak at
//
// fit searches batch sizes and technique combinations under a capacity
// (plan.Fit); the recommendation's target batch is run itself. --measure
// repeats the search for real, printing each technique as it finishes: on
// cpu devices (capacity ≤ 4 GiB), or with --device cuda on the GPU
// (capacity ≤ its free memory). fit --split --ranks N keeps the techniques
// given (--amp, --checkpoint, --accum, --zero…) and chooses --tp and --pp
// instead (plan.FitSplit): every tp × pp × dp layout of the N ranks, the
// fewest model-parallel ranks that fit the target batch chosen.
//
// bench runs package bench and writes bench.json, bench.md and PNG charts
// (--device cuda: every run on the GPU); --torch adds the PyTorch twin (scripts/bench_torch.py) when python3
// imports torch, and --rounds N repeats both sides N times, alternating which runs first, reporting the
// median of each side's rounds and of the rounds' ratios.
//
// Every subcommand takes --help and --json. Exit status: 0 on success (a
// plan that predicts an out-of-memory is an answer: 0, with "does not
// fit"); 64 for bad usage (an unknown command, flag or model, a bad
// value, a file of an unknown kind), with a message naming it; 3 when the
// work failed because a device ran out of memory, with the whole
// explanation on stderr; 69 when --device cuda cannot open a GPU (fit
// --measure, bench: no driver, no GPU), with what is missing; 1 when it
// failed otherwise. Go's runtime exits
// with 2 on a panic: 2 means a bug.
package main
