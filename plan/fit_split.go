package plan

import (
	"fmt"
	"strings"

	"github.com/headroom-ml/headroom/device"
)

// Layout is one arrangement of a fit's ranks into TP tensor-parallel
// ranks × PP pipeline stages × DP data-parallel copies, and how it did:
// its Option says whether the target batch (rounded up to a multiple of
// DP × accum, Unit) fits, with the worst rank's peak; MaxBatch and Peak,
// the largest batch found to fit, are searched for the chosen layout only
// (0 on the others).
type Layout struct {
	TP int `json:"tp"`
	PP int `json:"pp"`
	DP int `json:"dp"`
	// Skipped says why the layout was not planned ("": it was): the
	// model's limits or a combination not available with a split model.
	Skipped string `json:"skipped,omitempty"`
	Option
}

// ModelRanks is the layout's model-parallel ranks, TP × PP: the ranks
// one copy of the model is split over.
func (l Layout) ModelRanks() int { return l.TP * l.PP }

// SplitFitResult answers "how do I arrange my ranks so that the batch
// fits?".
type SplitFitResult struct {
	FitTarget
	Ranks   int      `json:"ranks"`
	Layouts []Layout `json:"layouts"`
	// Best is the chosen layout (nil: none fits the target batch).
	Best *Layout `json:"best"`
}

// FitSplit searches the layouts of c.Ranks ranks (TP × PP × DP =
// c.Ranks, each a divisor) for a GPT under capacity, on meta devices,
// with c's techniques (AMP, checkpointing, accumulation, ZeRO…) as
// given. A layout is planned when the model allows it — its heads divide
// by TP, it has at least PP layers (the vocabulary is padded to a
// multiple of TP, as plan --tp does) — and the combination is available
// (see Config.TP); otherwise it is listed with the reason. ZeRO applies
// over the data-parallel copies, so layouts with DP 1 run without it.
// Sequence parallelism applies to the layouts with TP ≥ 2.
//
// The global batch is fixed across layouts: target (0: the model's batch
// per rank × c.Ranks × accum, the data-parallel layout's default),
// rounded up to a multiple of each layout's DP × accum. Each layout's
// step runs once, at its target batch; then Fit's search finds the chosen
// layout's largest batch (see Fit for what the search relies on). So the
// cost is one plan per layout and one bisection.
//
// The rule: among the layouts whose target batch ran within the
// capacity, the fewest model-parallel ranks TP × PP (each split adds
// communication: more data parallelism is cheaper when the model fits),
// then the lowest worst-rank peak at the target batch (the most
// headroom), then the smaller TP (tensor parallelism all-reduces
// activations in every layer, a pipeline sends one activation per stage
// boundary).
func FitSplit(c Config, capacity int64, target int) (*SplitFitResult, error) {
	if c.TP > 1 || c.PP > 1 {
		return nil, fmt.Errorf("plan: fit split: tp %d, pp %d given: the search chooses them (give the whole rank count as ranks)", c.TP, c.PP)
	}
	base, m, ft, err := fitTarget(c, capacity, target, "fit split")
	if err != nil {
		return nil, err
	}
	if m.Kind != "gpt" {
		return nil, fmt.Errorf("plan: fit split: %s: tensor and pipeline parallelism split a GPT: want a GPT model", m.Name)
	}
	target = ft.Target
	r := &SplitFitResult{FitTarget: ft, Ranks: base.Ranks}
	for _, l := range layouts(base.Ranks) {
		if err := fitLayout(c, m, capacity, target, &l); err != nil {
			return nil, fmt.Errorf("plan: fit split: tp %d pp %d dp %d: %w", l.TP, l.PP, l.DP, err)
		}
		r.Layouts = append(r.Layouts, l)
	}
	if r.Best = bestLayout(r.Layouts); r.Best != nil {
		b := r.Best
		cc := layoutConfig(c, *b, 0)
		cc.Capacity = capacity
		o, err := search(probeOf(cc), b.Unit, target, -1)
		if err != nil {
			return nil, fmt.Errorf("plan: fit split: tp %d pp %d dp %d: %w", b.TP, b.PP, b.DP, err)
		}
		b.MaxBatch, b.Peak, b.Note = o.MaxBatch, o.Peak, o.Note
		if o.MaxBatch < b.TargetBatch {
			b.Note = fmt.Sprintf("batch %d fits although the search found batch %d fitting and %d not: memory is not monotone in the batch here", b.TargetBatch, o.MaxBatch, o.MaxBatch+b.Unit)
		}
	}
	return r, nil
}

// layouts lists the (TP, PP, DP) with TP × PP × DP = n, by TP × PP, then
// TP.
func layouts(n int) []Layout {
	var ls []Layout
	for mp := 1; mp <= n; mp++ {
		for t := 1; t <= mp; t++ {
			if n%mp == 0 && mp%t == 0 {
				ls = append(ls, Layout{TP: t, PP: mp / t, DP: n / mp})
			}
		}
	}
	return ls
}

// layoutConfig is c arranged as l, at batch: ZeRO and sequence
// parallelism only where they apply.
func layoutConfig(c Config, l Layout, batch int) Config {
	c.TP, c.PP, c.Ranks, c.Batch = l.TP, l.PP, l.DP, batch
	if l.DP < 2 && l.ModelRanks() > 1 {
		c.Zero = 0
	}
	c.Sequence = c.Sequence && l.TP > 1
	return c
}

// fitLayout plans l at the target batch: the model's limits and the
// configuration's checks first (a failure is l.Skipped).
func fitLayout(c Config, m Model, capacity int64, target int, l *Layout) error {
	accum := max(c.Accum, 1)
	unit := l.DP * accum
	tb := (target + unit - 1) / unit * unit
	switch {
	case m.GPT.Heads%l.TP != 0:
		l.Skipped = fmt.Sprintf("%d heads do not divide by tp %d", m.GPT.Heads, l.TP)
		return nil
	case m.GPT.Layers < l.PP:
		l.Skipped = fmt.Sprintf("%d layers, fewer than pp %d stages", m.GPT.Layers, l.PP)
		return nil
	}
	if _, _, err := layoutConfig(c, *l, tb).resolved(); err != nil {
		l.Skipped = strings.TrimPrefix(err.Error(), "plan: ")
		return nil
	}
	cc := layoutConfig(c, *l, 0)
	cc.Capacity = capacity
	var err error
	l.Unit, l.TargetBatch = unit, tb
	l.TargetFits, l.TargetPeak, err = probeOf(cc)(tb)
	return err
}

// bestLayout picks FitSplit's layout (nil: none fits its target).
func bestLayout(ls []Layout) *Layout {
	var best *Layout
	for i := range ls {
		l := &ls[i]
		if l.Skipped != "" || !l.TargetFits {
			continue
		}
		if best == nil || better(*l, *best) {
			best = l
		}
	}
	return best
}

// better reports whether a comes before b by FitSplit's rule.
func better(a, b Layout) bool {
	switch {
	case a.ModelRanks() != b.ModelRanks():
		return a.ModelRanks() < b.ModelRanks()
	case a.TargetPeak != b.TargetPeak:
		return a.TargetPeak < b.TargetPeak
	}
	return a.TP < b.TP
}

// String renders the layouts as a table with the choice.
func (r *SplitFitResult) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s over %d ranks of %s, target batch %d\n", r.Model, r.Ranks, device.FormatBytes(r.Capacity), r.Target)
	fmt.Fprintf(&b, "  %4s %4s %4s %12s %12s\n", "tp", "pp", "dp", "target fits", "worst peak")
	for _, l := range r.Layouts {
		if l.Skipped != "" {
			fmt.Fprintf(&b, "  %4d %4d %4d  skipped: %s\n", l.TP, l.PP, l.DP, l.Skipped)
			continue
		}
		peak := "-"
		if l.TargetFits {
			peak = device.FormatBytes(l.TargetPeak)
		}
		fmt.Fprintf(&b, "  %4d %4d %4d %12v %12s\n", l.TP, l.PP, l.DP, l.TargetFits, peak)
	}
	if l := r.Best; l != nil {
		fmt.Fprintf(&b, "use --tp %d --pp %d --dp %d: batch %d fits (worst rank's peak %s; up to batch %d), the fewest model-parallel ranks that fit, then the lowest peak\n",
			l.TP, l.PP, l.DP, l.TargetBatch, device.FormatBytes(l.TargetPeak), l.MaxBatch)
	} else {
		fmt.Fprintf(&b, "no layout of %d ranks fits batch %d in %s: add ranks, techniques (--amp, --checkpoint, --accum) or a smaller batch\n", r.Ranks, r.Target, device.FormatBytes(r.Capacity))
	}
	return b.String()
}
