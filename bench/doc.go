// Package bench measures what each memory technique really costs: it runs
// every technique — named with the example programs' flags: amp bf16
// (autocast), amp bf16 + amp-params (bf16 parameters, f32 master
// weights), amp fp16 + amp-params (with loss scaling), checkpointing
// (⌈√n⌉ segments or a byte budget), accumulation, their combination, data
// parallelism over 2 ranks with ZeRO stages 1 and 2 and offload, and, for
// the Transformer only, a GPT split over ranks (tp 2; pp 2 over 2
// micro-batches; dp 2 × tp 2 × pp 2 with ZeRO 1: 8 ranks, each row's
// rank_peak_bytes every rank's peak from its own device's allocator) — for real
// on cpu devices (or on a GPU: Device), for the ResNet (SmallResNet on
// MNIST) and the Transformer (the byte-level GPT of
// examples/transformer on Go source), and compares each with the plain run.
//
// For each technique and model, plan.Measure runs the training step on the
// devices: peak bytes by tag (the largest rank's), what each tag held at
// the peak, the memory timeline of the measured step and its time. Then the
// example program (examples/resnet/run, examples/transformer/run) trains
// the same step on real data for a few steps: final loss, evaluation
// (test accuracy, validation loss) and throughput. Both allocate the same
// bytes, tag by tag; Row.SamePeak records the check.
//
//	res, err := bench.Run(bench.Config{Mode: bench.Quick})
//	paths, err := res.Write("out") // bench.json, bench.md, view-*.html pages, PNG charts
//
// Device (Config.Device, --device) is where every run trains: "cpu", the
// default, or "cuda": plan.Measure runs the step on cuda:0 (cuda:1 too for
// the 2-rank techniques) and the examples train with --device cuda; the
// peaks then include cuBLAS's 32 MiB workspace (plan's Resident), and
// without a GPU Run fails at once with a *train.DeviceError (the command
// exits 69).
//
// Knobs and defaults (Config): Mode Full (the examples' batches, 100
// training steps), Quick (about a minute on 2 cores) or Tiny (tests);
// Models both; Techniques all (Techniques), plain always first; Steps the
// mode's; MNIST the module cache's copy; Corpus $GOROOT/src/fmt; Device
// cpu.
//
// Outputs: Result.WriteJSON (one row per model and technique: each tag's
// own peak, what each tag held at the peak, seconds per step, samples per
// second, loss and evaluation, and each as a ratio to plain),
// Result.Markdown (a table per model: the peak and what each tag held at
// that moment, which add up to it) and Result.Charts: memory_MODEL.png
// (small multiples of the allocated bytes over the measured step, one
// panel per technique with plain in grey behind it, on shared axes) and
// peak_MODEL.png (what each tag held at the peak, stacked, one bar per
// technique with its total). Result.Write also writes each row's measured
// step as a memory page, view-MODEL-TECHNIQUE.html (about 10 bytes per
// event), named in the row's view, which headroom view bench.json#MODEL/TECHNIQUE
// opens or compares. Summarize and TimelinePNG explain a saved timeline. RunTorch runs scripts/bench_torch.py, the PyTorch twin of the
// same models, and SideBySide compares the two.
//
// A technique that is not a training step (INT8 inference) plugs in as a
// Technique with its own Run.
package bench
