package plan

import (
	"fmt"
	"sort"
	"strings"

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
}

// Techniques are the combinations Fit tries, cheapest first: mixed
// precision costs nothing extra (on an accelerator it is faster), then
// accumulation (more, smaller steps), then recomputation, then their
// combinations. Costs are estimates from the step's arithmetic: a forward
// pass is about a third of a training step, so recomputing every layer
// once costs about +33%; each extra micro-batch adds about 5% of a step in
// fixed per-step work at small batches.
var Techniques = []Technique{
	{"plain", func(*Config) {}, 0, "nothing extra"},
	{"bf16 autocast", func(c *Config) { c.AMP, c.Autocast = dtype.BF16, true }, 0, "16-bit activations: no extra compute (faster on hardware with 16-bit units)"},
	{"bf16 master weights", func(c *Config) { c.AMP = dtype.BF16 }, 0, "16-bit parameters, gradients and activations; the optimizer keeps f32 masters: no extra compute"},
	{"accumulate 2", func(c *Config) { c.Accum = 2 }, 0.05, "two micro-batches per step: the same arithmetic in two passes"},
	{"accumulate 4", func(c *Config) { c.Accum = 4 }, 0.15, "four micro-batches per step"},
	{"checkpoint √n", func(c *Config) { c.Checkpoint = -1 }, 0.33, "recomputes the checkpointed blocks' forward in backward (about a third of a step)"},
	{"bf16 autocast + checkpoint √n", func(c *Config) { c.AMP, c.Autocast, c.Checkpoint = dtype.BF16, true, -1 }, 0.33, "16-bit activations and recomputation"},
	{"bf16 master + checkpoint √n", func(c *Config) { c.AMP, c.Checkpoint = dtype.BF16, -1 }, 0.33, "16-bit model and recomputation"},
	{"bf16 master + checkpoint √n + accumulate 4", func(c *Config) { c.AMP, c.Checkpoint, c.Accum = dtype.BF16, -1, 4 }, 0.48, "all three"},
}

// Option is one technique's largest batch under the capacity.
type Option struct {
	Technique string  `json:"technique"`
	Cost      float64 `json:"extra_compute"`
	Why       string  `json:"why"`
	// MaxBatch is the largest global batch that fits (0: none).
	MaxBatch int `json:"max_batch"`
	// Peak is the peak bytes at MaxBatch.
	Peak int64 `json:"peak_bytes"`
}

// FitResult answers "what do I turn on, and will it fit?".
type FitResult struct {
	Model    string   `json:"model"`
	Capacity int64    `json:"capacity"`
	Target   int      `json:"target_batch"`
	Options  []Option `json:"options"`
	// Best is the cheapest option that reaches the target batch (nil: none).
	Best *Option `json:"best"`
}

// Fit finds, for each technique, the largest batch that fits capacity
// (bisecting on out-of-memory, on meta devices), and the cheapest that
// reaches target (the model's default batch when 0). c gives the model
// and any fixed settings (ranks, sequence length…).
func Fit(c Config, capacity int64, target int) (*FitResult, error) {
	return fit(c, capacity, target, Techniques, false)
}

// FitMeasured is Fit over the given techniques (nil: all) run for real on
// cpu devices of the given capacity: the check that the prediction's
// answer holds.
func FitMeasured(c Config, capacity int64, target int, techs []Technique) (*FitResult, error) {
	if techs == nil {
		techs = Techniques
	}
	return fit(c, capacity, target, techs, true)
}

func fit(c Config, capacity int64, target int, techs []Technique, onCPU bool) (*FitResult, error) {
	if capacity <= 0 {
		return nil, fmt.Errorf("plan: fit needs a capacity > 0")
	}
	base, m, err := c.resolved()
	if err != nil {
		return nil, err
	}
	if target == 0 {
		target = m.Batch
	}
	r := &FitResult{Model: m.Name, Capacity: capacity, Target: target}
	for _, tq := range techs {
		cc := c
		tq.Apply(&cc)
		cc.Capacity, cc.onCPU = capacity, onCPU
		b, peak, err := maxBatch(cc, base.Ranks)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", tq.Name, err)
		}
		r.Options = append(r.Options, Option{Technique: tq.Name, Cost: tq.Cost, Why: tq.Why, MaxBatch: b, Peak: peak})
	}
	for i := range r.Options {
		o := &r.Options[i]
		if o.MaxBatch >= target && (r.Best == nil || o.Cost < r.Best.Cost) {
			r.Best = o
		}
	}
	return r, nil
}

// maxBatch returns the largest global batch (a multiple of the ranks and
// micro-batches) whose step fits, and its peak.
func maxBatch(c Config, ranks int) (int, int64, error) {
	unit := ranks * max(c.Accum, 1)
	fits := func(b int) (bool, int64, error) {
		c.Batch = b
		p, err := Predict(c)
		if err != nil {
			return false, 0, err
		}
		if p.OOM != nil {
			return false, 0, nil
		}
		var peak int64
		for _, r := range p.Ranks {
			peak = max(peak, r.Total)
		}
		return true, peak, nil
	}
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
	fmt.Fprintf(&b, "  %-44s %10s %14s  %s\n", "technique", "max batch", "extra compute", "")
	for _, o := range opts {
		fmt.Fprintf(&b, "  %-44s %10d %13.0f%%  %s\n", o.Technique, o.MaxBatch, 100*o.Cost, o.Why)
	}
	if r.Best != nil {
		fmt.Fprintf(&b, "use %s: batch %d fits (up to %d, peak %s at that batch), %s\n",
			r.Best.Technique, r.Target, r.Best.MaxBatch, device.FormatBytes(r.Best.Peak), r.Best.Why)
	} else {
		fmt.Fprintf(&b, "no technique here fits batch %d in %s: add ranks with ZeRO (--ranks, --zero), offload, or a smaller batch\n", r.Target, device.FormatBytes(r.Capacity))
	}
	return b.String()
}
