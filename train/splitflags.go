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
var splitRefused = []string{"zero", "offload", "mpi", "save", "resume", "init", "mem-alert", "mem-log", "quantize", "prune", "amp-params", "stop-after"}

// CheckSplit checks --tp, --pp, --sequence-parallel and --pipe-schedule:
// each ≥ 1, not both above 1 (tensor parallelism inside pipeline stages
// is not available yet), --ranks 1 or --tp × --pp (more, data parallelism
// over model-parallel groups, is not available yet), the flags of
// splitRefused and, under --pp, --amp and --checkpoint refused as not
// available yet; --sequence-parallel needs --tp and --pipe-schedule --pp.
// The model's own limits (heads and vocabulary divisible by --tp, layers
// ≥ --pp) are the program's to check: SplitModel.
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
	switch {
	case c.SequenceParallel && c.TP < 2:
		return Usagef("--sequence-parallel needs --tp ≥ 2 (it splits the tensor-parallel group's token rows)")
	case c.Set("pipe-schedule") && c.PP < 2:
		return Usagef("--pipe-schedule %s needs --pp ≥ 2", c.PipeSchedule)
	case !c.Split():
		return nil
	case c.TP > 1 && c.PP > 1:
		return Usagef("--tp %d with --pp %d: not available yet (tensor parallelism inside pipeline stages); give one of them", c.TP, c.PP)
	case c.Set("ranks") && c.Ranks != c.SplitRanks():
		if c.Ranks%c.SplitRanks() == 0 {
			return Usagef("--ranks %d with --tp %d --pp %d: %d data-parallel copies of the model: not available yet; give --ranks %d (or leave it out)", c.Ranks, c.TP, c.PP, c.Ranks/c.SplitRanks(), c.SplitRanks())
		}
		return Usagef("--ranks %d with --tp %d --pp %d: want --ranks %d, the ranks of one model (or leave it out)", c.Ranks, c.TP, c.PP, c.SplitRanks())
	case c.Accum >= 1 && c.Batch%c.Accum != 0:
		return Usagef("--batch %d does not split into --accum %d micro-batches: want a multiple of %d", c.Batch, c.Accum, c.Accum)
	}
	refused := c.given(splitRefused)
	if c.PP > 1 {
		refused = append(refused, c.given([]string{"amp", "checkpoint", "checkpoint-budget"})...)
	}
	if len(refused) > 0 {
		sort.Strings(refused)
		return Usagef("%s with %s: not available yet in this version", strings.Join(refused, ", "), c.splitFlags())
	}
	c.Ranks = c.SplitRanks()
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
	if c.TP > 1 {
		return fmt.Sprintf("--tp %d", c.TP)
	}
	return fmt.Sprintf("--pp %d", c.PP)
}

// SplitDesc says where a model-parallel run runs, for its header: "2
// tensor-parallel ranks cpu:0…cpu:1 (in-process group)".
func (c *Common) SplitDesc(r *Rank) string {
	kind, first, _ := ParseDevice(c.Device)
	if kind == "cpu" {
		first = 0
	}
	n := c.SplitRanks()
	what := fmt.Sprintf("%d tensor-parallel ranks", n)
	if c.SequenceParallel {
		what += " with sequence parallelism"
	}
	if c.PP > 1 {
		what = fmt.Sprintf("%d pipeline stages (%s, %d micro-batches)", n, c.PipeSchedule, c.Accum)
	}
	return fmt.Sprintf("%s %s:%d…%s:%d (%s)", what, kind, first, kind, first+n-1, r.Via)
}
