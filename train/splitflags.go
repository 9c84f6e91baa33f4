package train

import (
	"fmt"
	"sort"
	"strings"

	"github.com/headroom-ml/headroom/parallel"
)

// Split reports whether the flags ask for model parallelism: --tp or --pp
// above 1.
func (c *Common) Split() bool { return c.TP > 1 || c.PP > 1 }

// DataRanks returns the data-parallel ranks: --ranks over the --tp × --pp
// ranks of one model (--ranks itself without model parallelism).
func (c *Common) DataRanks() int { return max(c.Ranks/max(c.TP*c.PP, 1), 1) }

// SplitRanks returns the ranks a model-parallel run uses, --tp × --pp.
func (c *Common) SplitRanks() int { return max(c.TP, 1) * max(c.PP, 1) }

// Schedule returns --pipe-schedule's schedule.
func (c *Common) Schedule() (parallel.Schedule, error) {
	switch c.PipeSchedule {
	case "", "1f1b":
		return parallel.OneFOneB, nil
	case "gpipe":
		return parallel.GPipe, nil
	}
	return 0, Usagef("--pipe-schedule %s: want 1f1b or gpipe", c.PipeSchedule)
}

// splitRefused are the flags a model-parallel run does not take yet.
var splitRefused = []string{"offload", "offload-activations", "activation-budget", "fused-loss", "init", "mem-alert", "mem-log", "quantize", "prune"}

// CheckSplit checks --tp, --pp, --sequence-parallel and --pipe-schedule:
// each ≥ 1, --ranks 1 or a multiple of --tp × --pp (the data-parallel
// copies of the pipeline: DataRanks), the batch split over the copies
// and the micro-batches, --zero 0 to 2 and only over copies, the flags of
// splitRefused and, under --pp or a composed layout, --checkpoint-budget
// and --selective refused as not available yet (--amp, --amp-params and
// --checkpoint work inside the stages); --sequence-parallel needs --tp
// and --pipe-schedule --pp. --clip clips by the whole model's gradient
// norm on every layout (parallel.MeshOptimizer); F16 gradients (--amp
// fp16 --amp-params) are loss-scaled, every rank skipping an overflowed
// step together. The model's own limits (heads and vocabulary divisible
// by --tp, layers ≥ --pp) are the program's to check. It sets --ranks to
// the mesh's size.
func (c *Common) CheckSplit() error {
	if err := First(
		Want(c.TP >= 1, "tp", c.TP, "≥ 1 tensor-parallel ranks"),
		Want(c.PP >= 1, "pp", c.PP, "≥ 1 pipeline stages"),
	); err != nil {
		return err
	}
	if _, err := c.Schedule(); err != nil {
		return err
	}
	n, dp := c.SplitRanks(), c.Ranks/c.SplitRanks()
	switch {
	case c.SequenceParallel && c.TP < 2:
		return Usagef("--sequence-parallel needs --tp ≥ 2 (it splits the tensor-parallel group's token rows)")
	case c.Set("pipe-schedule") && c.PP < 2:
		return Usagef("--pipe-schedule %s needs --pp ≥ 2", c.PipeSchedule)
	case !c.Split():
		return nil
	case c.Ranks < 1 || c.Ranks > 1 && c.Ranks%n != 0:
		return Usagef("--ranks %d with --tp %d --pp %d: want a multiple of %d (the data-parallel copies of the %d-rank model), or leave it out", c.Ranks, c.TP, c.PP, n, n)
	case c.Accum >= 1 && c.Batch%(max(dp, 1)*c.Accum) != 0:
		return Usagef("--batch %d does not split over %d data-parallel copies × --accum %d micro-batches: want a multiple of %d", c.Batch, max(dp, 1), c.Accum, max(dp, 1)*c.Accum)
	case c.Zero != 0 && (dp < 2 || c.Zero > 2):
		return Usagef("--zero %d with --tp %d --pp %d on %d data-parallel copies: want --zero 1 or 2 over ≥ 2 copies (--ranks a multiple of %d); stage 3 is not available yet", c.Zero, c.TP, c.PP, max(dp, 1), 2*n)
	}
	refused := c.given(splitRefused)
	if c.PP > 1 || dp > 1 {
		refused = append(refused, c.given([]string{"checkpoint-budget", "selective"})...)
	}
	if len(refused) > 0 {
		sort.Strings(refused)
		return Usagef("%s with %s: not available yet in this version", strings.Join(refused, ", "), c.splitFlags())
	}
	c.Ranks = max(dp, 1) * n
	return nil
}

// given returns the flags among names that were given, as "--name".
func (c *Common) given(names []string) []string {
	var out []string
	for _, n := range names {
		if c.Set(n) {
			out = append(out, "--"+n)
		}
	}
	return out
}

// splitFlags names the model-parallel flags given ("--tp 2").
func (c *Common) splitFlags() string {
	var fs []string
	if c.TP > 1 {
		fs = append(fs, fmt.Sprintf("--tp %d", c.TP))
	}
	if c.PP > 1 {
		fs = append(fs, fmt.Sprintf("--pp %d", c.PP))
	}
	if c.Ranks > c.SplitRanks() {
		fs = append(fs, fmt.Sprintf("--ranks %d", c.Ranks))
	}
	return strings.Join(fs, " ")
}

// SplitDesc says where a model-parallel run runs, for its header: "2
// tensor-parallel ranks × 2 pipeline stages (1f1b, 4 micro-batches) × 2
// data-parallel copies on cpu:0…cpu:7 (in-process mesh …)".
func (c *Common) SplitDesc(r *Rank) string {
	kind, first, _ := ParseDevice(c.Device)
	if kind == "cpu" {
		first = 0
	}
	var parts []string
	if c.TP > 1 {
		tp := fmt.Sprintf("%d tensor-parallel ranks", c.TP)
		if c.SequenceParallel {
			tp += " with sequence parallelism"
		}
		parts = append(parts, tp)
	}
	if c.PP > 1 {
		parts = append(parts, fmt.Sprintf("%d pipeline stages (%s, %d micro-batches)", c.PP, c.PipeSchedule, c.Accum))
	}
	if d := c.DataRanks(); d > 1 {
		parts = append(parts, fmt.Sprintf("%d data-parallel copies (ZeRO stage %d)", d, c.Zero))
	}
	return fmt.Sprintf("%s on %s:%d…%s:%d (%s)", strings.Join(parts, " × "), kind, first, kind, first+c.Ranks-1, r.Via)
}
