package plan

import (
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	"github.com/headroom-ml/headroom/device"
	"github.com/headroom-ml/headroom/dtype"
)

// Technique is one combination of memory techniques the fit search tries.
type Technique struct {
	Name string
	// Apply sets the technique on a configuration.
	Apply func(*Config)
	// Cost is the extra compute of a step, as a fraction of a plain
	// step's, and Why explains it.
	Cost float64
	Why  string
	// Other marks a technique that trains something else than the model
	// (LoRA adapters): Fit lists it but never recommends it.
	Other bool
}

// Techniques are the combinations Fit tries, cheapest first: mixed
// precision costs nothing extra (on an accelerator it is faster), then
// accumulation (more, smaller steps), then recomputation, then their
// combinations. Costs are estimates from the step's arithmetic: a forward
// pass is about a third of a training step, so recomputing every layer
// once costs about +33%; each extra micro-batch adds about 5% of a step in
// fixed per-step work at small batches.
var Techniques = []Technique{
	{"plain", func(*Config) {}, 0, "nothing extra", false},
	{"amp bf16", func(c *Config) { c.AMP = dtype.BF16 }, 0, "autocast: the forward in bf16, f32 parameters: no extra compute (faster on hardware with 16-bit units)", false},
	{"amp bf16 + amp-params", func(c *Config) { c.AMP, c.AMPParams = dtype.BF16, true }, 0, "bf16 parameters, gradients and activations; the optimizer keeps f32 masters: no extra compute", false},
	{"accum 2", func(c *Config) { c.Accum = 2 }, 0.05, "two micro-batches per step: the same arithmetic in two passes", false},
	{"accum 4", func(c *Config) { c.Accum = 4 }, 0.15, "four micro-batches per step", false},
	{"offload activations", func(c *Config) { c.OffloadActivations = true }, 0, "no extra compute: each block's saved tensors go to the host and come back in backward, two copies of them per step (the fetch overlapped with backward); the host holds them", false},
	{"selective", func(c *Config) { c.Selective = true }, 0.1, "recomputes each block's pointwise ops, norms and softmax in backward, keeps its matmul and fused attention outputs (no matmul recomputed; a materialized attention's core is)", false},
	{"activation budget", func(c *Config) { c.fitBudget = true }, 0.15, "keep, selective, recompute or offload per block so the activations fit what the capacity leaves (headroom plan --activation-budget prints the choice and its estimated time): between 0 (all kept) and recompute's 0.33; GPT only", false},
	{"checkpoint √n", func(c *Config) { c.Checkpoint = -1 }, 0.33, "recomputes the checkpointed blocks' forward in backward (about a third of a step)", false},
	{"amp bf16 + checkpoint √n", func(c *Config) { c.AMP, c.Checkpoint = dtype.BF16, -1 }, 0.33, "16-bit activations and recomputation", false},
	{"amp bf16 + amp-params + checkpoint √n", func(c *Config) { c.AMP, c.AMPParams, c.Checkpoint = dtype.BF16, true, -1 }, 0.33, "16-bit model and recomputation", false},
	{"amp bf16 + amp-params + checkpoint √n + accum 4", func(c *Config) { c.AMP, c.AMPParams, c.Checkpoint, c.Accum = dtype.BF16, true, -1, 4 }, 0.48, "all three", false},
	{"adamw8bit", func(c *Config) { c.Optimizer = Adam8bitName }, 0, "AdamW's m and v in 8 bits per element with an f32 absmax per block: about a quarter of the state, the same update arithmetic per element (dequantised per block)", false},
	{"step in backward", func(c *Config) { c.StepInBackward = true }, 0, "each parameter steps as soon as its gradient is complete, and the gradient is freed: one gradient alive instead of all; the host holds a copy of the parameters and their state during the step (no clipping)", false},
	{"adamw8bit + step in backward + checkpoint √n", func(c *Config) { c.Optimizer, c.StepInBackward, c.Checkpoint = Adam8bitName, true, -1 }, 0.33, "8-bit state, one gradient at a time and recomputation", false},
	{Name: "qlora 16", Apply: func(c *Config) { c.LoRA, c.LoRABase = 16, "int8" }, Other: true,
		Why: "trains rank-16 adapters over a frozen int8 base instead of the model: a different fine-tune (never recommended), with gradients and state for the adapters only"},
}

// Option is one technique's largest batch under the capacity.
type Option struct {
	Technique string  `json:"technique"`
	Cost      float64 `json:"extra_compute"`
	Why       string  `json:"why"`
	// Unit is the step between the batches searched: ranks × micro-batches.
	Unit int `json:"batch_unit"`
	// MaxBatch is the largest global batch found to fit (0: none): its
	// step ran within the capacity and the step of MaxBatch + Unit did not
	// (both were run; see Fit).
	MaxBatch int `json:"max_batch"`
	// Peak is the peak bytes at MaxBatch.
	Peak int64 `json:"peak_bytes"`
	// TargetBatch is the target rounded up to a multiple of Unit; when it
	// is at most MaxBatch its step is run too, and TargetFits and
	// TargetPeak say how it went.
	TargetBatch int   `json:"target_batch"`
	TargetFits  bool  `json:"target_fits"`
	TargetPeak  int64 `json:"target_peak_bytes"`
	// Note explains a target batch that does not fit below one that does.
	Note string `json:"note,omitempty"`
}

// FitTarget is what a fit searches for: the model, each device's
// capacity in bytes and the target global batch.
type FitTarget struct {
	Model    string `json:"model"`
	Capacity int64  `json:"capacity"`
	Target   int    `json:"target_batch"`
}

// fitTarget checks capacity and target and resolves c (op names the
// search in errors); a target of 0 is c's default batch.
func fitTarget(c Config, capacity int64, target int, op string) (Config, Model, FitTarget, error) {
	if capacity <= 0 || capacity >= MaxBytes {
		return c, Model{}, FitTarget{}, fmt.Errorf("plan: %s: capacity %d bytes: want 0 < capacity < %d (2^62)", op, capacity, int64(MaxBytes))
	}
	base, m, err := c.resolved()
	if err != nil {
		return c, m, FitTarget{}, err
	}
	if target == 0 {
		target = base.Batch
	}
	if target < 0 {
		return c, m, FitTarget{}, fmt.Errorf("plan: %s: target batch %d: want ≥ 0 (0: the default)", op, target)
	}
	return base, m, FitTarget{Model: m.Name, Capacity: capacity, Target: target}, nil
}

// FitResult answers "what do I turn on, and will it fit?".
type FitResult struct {
	FitTarget
	Options []Option `json:"options"`
	// Best is the cheapest option whose target batch ran within the
	// capacity (nil: none).
	Best *Option `json:"best"`
}

// Fit finds, for each technique, the largest batch that fits capacity
// (bisecting on out-of-memory, on meta devices), and the cheapest that
// reaches target (the default batch of c when 0: the model's batch per
// rank, times the ranks). c gives the model and any fixed settings (ranks,
// sequence length…).
//
// The bisection assumes that a batch fits when a larger one does. The
// allocator need not make that true (a different batch changes which
// cached blocks serve which requests), so Fit relies only on steps it
// ran: each MaxBatch ran within the capacity and MaxBatch + Unit did not,
// and the recommendation is the cheapest technique whose target batch
// itself ran within it. A target that does not fit below a MaxBatch that
// does is reported in the option's Note, not recommended.
func Fit(c Config, capacity int64, target int) (*FitResult, error) {
	return fit(c, capacity, target, Techniques, nil, nil)
}

// FitMeasured is Fit over the given techniques (nil: all) run for real on
// devices of kind c.Device (cpu devices, or cuda: the GPU) of the given
// capacity: the check that the prediction's answer holds. It first runs
// Fit, then, for each technique, the predicted largest batch and the
// batch after it on those devices: when the first fits and the second
// does not, that is the measured answer (what a bisection there
// establishes too), else it bisects there. It writes a
// line per technique to log (nil: none) as each ends, with its time: each
// probe trains real steps.
func FitMeasured(c Config, capacity int64, target int, techs []Technique, log io.Writer) (*FitResult, error) {
	if techs == nil {
		techs = Techniques
	}
	pred, err := fit(c, capacity, target, techs, nil, nil)
	if err != nil {
		return nil, err
	}
	hints := make([]int, len(techs))
	for i, o := range pred.Options {
		hints[i] = o.MaxBatch
	}
	return fit(c, capacity, target, techs, hints, log)
}

// fit searches each technique on meta devices, or on c.Device's real devices when
// hints (each technique's predicted largest batch) are given.
func fit(c Config, capacity int64, target int, techs []Technique, hints []int, log io.Writer) (*FitResult, error) {
	base, _, ft, err := fitTarget(c, capacity, target, "fit")
	if err != nil {
		return nil, err
	}
	target = ft.Target
	r := &FitResult{FitTarget: ft}
	for i, tq := range techs {
		began := time.Now()
		cc := c
		tq.Apply(&cc)
		if err := cc.Validate(); err != nil { // a combination the fixed settings exclude (LoRA with amp-params, say)
			r.Options = append(r.Options, Option{Technique: tq.Name, Cost: tq.Cost, Why: tq.Why, Unit: base.Ranks * max(cc.Accum, 1),
				Note: "not searched: " + err.Error()})
			continue
		}
		if cc.fitBudget && !budgetable(cc) {
			continue // the activation budget counts FLOPs of GPT blocks only
		}
		hint := -1
		if hints != nil {
			cc.measure, hint = true, hints[i]
		}
		cc.Capacity = capacity
		o, err := search(probeOf(cc), base.Ranks*max(cc.Accum, 1), target, hint)
		if err != nil {
			return nil, fmt.Errorf("plan: fit: %s: %w", tq.Name, err)
		}
		o.Technique, o.Cost, o.Why = tq.Name, tq.Cost, tq.Why
		r.Options = append(r.Options, o)
		if log != nil {
			fmt.Fprintf(log, "  %-48s max batch %6d  (%.1f s)\n", tq.Name, o.MaxBatch, time.Since(began).Seconds())
		}
	}
	for i := range r.Options {
		o := &r.Options[i]
		if o.TargetFits && !techs[i].Other && (r.Best == nil || o.Cost < r.Best.Cost) {
			r.Best = o
		}
	}
	return r, nil
}

// probe runs c at one batch: whether it fits and its largest rank's peak.
type probe func(batch int) (bool, int64, error)

func probeOf(c Config) probe {
	if c.fitBudget {
		return budgetProbe(c)
	}
	return func(b int) (bool, int64, error) {
		c.Batch = b
		p, err := Predict(c)
		if err != nil || p.OOM != nil {
			return false, 0, err
		}
		var peak int64
		for _, r := range p.Ranks {
			peak = max(peak, r.Total)
		}
		return true, peak, nil
	}
}

// search finds the largest batch that fits (a multiple of unit: the
// ranks times the micro-batches), trying hint first when it is ≥ 0, and
// runs the target batch when it is not larger.
func search(fits probe, unit, target, hint int) (Option, error) {
	o := Option{Unit: unit}
	o.TargetBatch = (target + o.Unit - 1) / o.Unit * o.Unit
	found, err := false, error(nil)
	if hint >= 0 {
		o.MaxBatch, o.Peak, found, err = verify(fits, unit, hint)
	}
	if err == nil && !found {
		o.MaxBatch, o.Peak, err = maxBatch(fits, o.Unit)
	}
	if err != nil || o.MaxBatch < o.TargetBatch {
		return o, err
	}
	if o.TargetBatch == o.MaxBatch {
		o.TargetFits, o.TargetPeak = true, o.Peak
		return o, nil
	}
	if o.TargetFits, o.TargetPeak, err = fits(o.TargetBatch); err == nil && !o.TargetFits {
		o.TargetPeak = 0
		o.Note = fmt.Sprintf("batch %d does not fit although batch %d does: memory is not monotone in the batch here", o.TargetBatch, o.MaxBatch)
	}
	return o, err
}

// verify reports whether b is the answer maxBatch would give: b fits
// (or is 0) and b + unit does not; it returns b's peak.
func verify(fits probe, unit, b int) (int, int64, bool, error) {
	var peak int64
	if b > 0 {
		ok, p, err := fits(b)
		if err != nil || !ok {
			return 0, 0, false, err
		}
		peak = p
	}
	next, _, err := fits(b + unit)
	return b, peak, err == nil && !next, err
}

// maxBatch bisects for the largest multiple of unit that fits, and its
// peak: lo always fits and hi (once found) does not, so the answer and
// the batch after it were both run.
func maxBatch(fits probe, unit int) (int, int64, error) {
	ok, peak, err := fits(unit)
	if err != nil || !ok {
		return 0, 0, err
	}
	lo, loPeak, hi := unit, peak, 0 // lo fits; hi (when > 0) does not
	for hi == 0 {
		next := lo * 2
		ok, p, err := fits(next)
		if err != nil {
			return 0, 0, err
		}
		if ok {
			lo, loPeak = next, p
			if lo > 1<<20 {
				return lo, loPeak, nil // no memory bound in sight
			}
		} else {
			hi = next
		}
	}
	for hi-lo > unit {
		mid := (lo + hi) / 2 / unit * unit
		ok, p, err := fits(mid)
		if err != nil {
			return 0, 0, err
		}
		if ok {
			lo, loPeak = mid, p
		} else {
			hi = mid
		}
	}
	return lo, loPeak, nil
}

// String renders the result as a table with the recommendation.
func (r *FitResult) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s in %s, target batch %d\n", r.Model, device.FormatBytes(r.Capacity), r.Target)
	opts := append([]Option(nil), r.Options...)
	sort.SliceStable(opts, func(i, j int) bool { return opts[i].Cost < opts[j].Cost })
	fmt.Fprintf(&b, "  %-48s %10s %14s  %s\n", "technique", "max batch", "extra compute", "")
	for _, o := range opts {
		fmt.Fprintf(&b, "  %-48s %10d %13.0f%%  %s\n", o.Technique, o.MaxBatch, 100*o.Cost, o.Why)
	}
	for _, o := range opts {
		if o.Note != "" {
			fmt.Fprintf(&b, "%s: %s\n", o.Technique, o.Note)
		}
	}
	if o := r.Best; o != nil {
		fmt.Fprintf(&b, "use %s: batch %d fits (peak %s; up to batch %d), %s\n",
			o.Technique, o.TargetBatch, device.FormatBytes(o.TargetPeak), o.MaxBatch, o.Why)
	} else {
		fmt.Fprintf(&b, "no technique here fits batch %d in %s: add ranks with ZeRO (--ranks, --zero), offload, or a smaller batch\n", r.Target, device.FormatBytes(r.Capacity))
	}
	return b.String()
}
