// Command headroom plans, fits, benchmarks and explains the memory of
// training steps.
//
//	headroom plan --model gpt-7.5b --ranks 64 --zero 2 --amp fp16   # exact bytes per rank, before running
//	headroom fit --model gpt2 --capacity 24GiB                        # largest batch, cheapest techniques
//	headroom bench --quick --out bench-results                        # every technique for real on the CPU
//	headroom summary report.json                                      # a run report, timeline or bench.json
//
// plan runs the model's real training step on meta devices (package plan):
// the JSON (--json) has model, params, peak_bytes (the largest rank's) and
// ranks, each with rank, device, peak_bytes, model_state_bytes,
// parameter_bytes, gradient_bytes, optimizer_bytes, activation_bytes,
// workspace_bytes, communication_bytes and, with --offload, host (the same
// fields). Its --amp is mixed precision as ZeRO counts it (16-bit
// parameters and gradients, f32 master weights); --autocast selects
// autocast instead. Without --batch, each rank's micro-batch is the
// model's default batch.
//
// fit searches batch sizes and technique combinations under a capacity
// (plan.Fit); --measure repeats the search for real on cpu devices.
//
// bench runs package bench and writes bench.json, bench.md and PNG charts;
// --torch adds the PyTorch twin (scripts/bench_torch.py) when python3
// imports torch.
//
// Every subcommand takes --help and --json. Exit status: 0 on success, 1
// when the work failed, 2 for bad usage (an unknown command, flag or
// model, a bad value, a file of an unknown kind), with a message naming
// it.
package main
