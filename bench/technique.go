package bench

import (
	"fmt"
	"strconv"

	"github.com/headroom-ml/headroom/checkpoint"
	"github.com/headroom-ml/headroom/dtype"
	"github.com/headroom-ml/headroom/plan"
)

// Technique is one memory technique (or combination) the bench runs.
type Technique struct {
	Name string
	// Apply sets the technique on a planner configuration. plain is the
	// plain run's row of the same model (nil while measuring plain
	// itself), for settings relative to it such as a checkpoint budget.
	Apply func(c *plan.Config, plain *Row)
	// Run, when set, measures the technique itself instead of the
	// planner's training step and the example's training run: the hook
	// for what is not a training step, such as INT8 inference. It returns
	// the row (Model and Technique are filled in by the bench).
	Run func(s Setup, plain *Row) (*Row, error)
	// GPT marks a technique only a GPT takes (tensor and pipeline
	// parallelism): Run skips it on the other models.
	GPT bool
}

// Techniques returns the techniques the bench runs by default, plain
// first: the reference every other row is compared with.
func Techniques() []Technique {
	set := func(f func(c *plan.Config)) func(*plan.Config, *Row) { return func(c *plan.Config, _ *Row) { f(c) } }
	ts := []Technique{
		{Name: "plain", Apply: set(func(*plan.Config) {})},
		{Name: "amp bf16", Apply: set(func(c *plan.Config) { c.AMP = dtype.BF16 })},
		{Name: "amp bf16 + amp-params", Apply: set(func(c *plan.Config) { c.AMP, c.AMPParams = dtype.BF16, true })},
		{Name: "amp fp16 + amp-params", Apply: set(func(c *plan.Config) { c.AMP, c.AMPParams = dtype.F16, true })},
		{Name: "checkpoint √n", Apply: set(func(c *plan.Config) { c.Checkpoint = -1 })},
		{Name: "checkpoint budget", Apply: func(c *plan.Config, plain *Row) {
			// Half of the plain step's activation peak.
			c.CheckpointBudget = 1 << 20
			if plain != nil && plain.Peak.Activation > 0 {
				c.CheckpointBudget = plain.Peak.Activation / 2
			}
		}},
		{Name: "selective", Apply: set(func(c *plan.Config) { c.Selective = true })},
		{Name: "step in backward", Apply: set(func(c *plan.Config) { c.StepInBackward = true })},
		{Name: "adamw8bit", GPT: true, Apply: set(func(c *plan.Config) { c.Optimizer = plan.Adam8bitName })},
		{Name: "adamw8bit + step in backward + checkpoint √n", GPT: true, Apply: set(func(c *plan.Config) {
			c.Optimizer, c.StepInBackward, c.Checkpoint = plan.Adam8bitName, true, -1
		})},
		{Name: "lora 8", GPT: true, Apply: set(func(c *plan.Config) { c.LoRA = 8 })},
		{Name: "qlora 8 (int8 base)", GPT: true, Apply: set(func(c *plan.Config) { c.LoRA, c.LoRABase = 8, "int8" })},
		{Name: "offload activations", Apply: set(func(c *plan.Config) { c.OffloadActivations = true })},
		{Name: "activation budget", GPT: true, Apply: func(c *plan.Config, plain *Row) {
			// 40% of the plain step's activation peak (issue #18's target).
			c.ActivationBudget = 1 << 20
			if plain != nil && plain.Peak.Activation > 0 {
				c.ActivationBudget = plain.Peak.Activation * 2 / 5
			}
		}},
		{Name: "accum 4", Apply: set(func(c *plan.Config) { c.Accum = 4 })},
		{Name: "amp bf16 + amp-params + checkpoint √n + accum 4", Apply: set(func(c *plan.Config) {
			c.AMP, c.AMPParams, c.Checkpoint, c.Accum = dtype.BF16, true, -1, 4
		})},
		{Name: "ranks 2", Apply: set(func(c *plan.Config) { c.Ranks = 2 })},
		{Name: "ranks 2 + zero 1", Apply: set(func(c *plan.Config) { c.Ranks, c.Zero = 2, 1 })},
		{Name: "ranks 2 + zero 2", Apply: set(func(c *plan.Config) { c.Ranks, c.Zero = 2, 2 })},
		{Name: "ranks 2 + zero 2 + offload", Apply: set(func(c *plan.Config) { c.Ranks, c.Zero, c.Offload = 2, 2, true })},
		{Name: "ranks 2 + zero 2 + step in backward", Apply: set(func(c *plan.Config) { c.Ranks, c.Zero, c.StepInBackward = 2, 2, true })},
	}
	return append(ts, splitTechniques()...)
}

// Select returns the techniques of Techniques() with the given names, in
// the order given (nil or empty: all).
func Select(names []string) ([]Technique, error) {
	all := Techniques()
	if len(names) == 0 {
		return all, nil
	}
	var out []Technique
	for _, n := range names {
		found := false
		for _, t := range all {
			if t.Name == n {
				out, found = append(out, t), true
				break
			}
		}
		if !found {
			return nil, fmt.Errorf("bench: unknown technique %q (want one of %q)", n, techniqueNames(all))
		}
	}
	return out, nil
}

func techniqueNames(ts []Technique) []string {
	var ns []string
	for _, t := range ts {
		ns = append(ns, t.Name)
	}
	return ns
}

// Flags returns the example program's flags for the step planned by c:
// --batch (the global batch, as the planner's), --amp and --amp-params,
// --checkpoint or --checkpoint-budget, --accum, --ranks, --zero,
// --offload, --optimizer adamw8bit, --lora and --lora-base, and
// --step-in-backward (with --clip=0 for a GPT); with tensor
// or pipeline parallelism --tp, --pp and --ranks as the whole mesh
// (splitFlags).
func Flags(c plan.Config) []string {
	batch := max(c.Batch, 1)
	var f []string
	if c.AMP != dtype.Invalid {
		f = append(f, "--amp="+ampName(c.AMP))
	}
	if c.AMPParams {
		f = append(f, "--amp-params")
	}
	switch {
	case c.Checkpoint < 0:
		f = append(f, "--checkpoint")
	case c.Checkpoint > 0:
		f = append(f, "--checkpoint="+strconv.Itoa(c.Checkpoint))
	case c.CheckpointBudget > 0:
		f = append(f, "--checkpoint-budget="+strconv.FormatInt(c.CheckpointBudget, 10))
	}
	f = append(f, activationFlags(c)...)
	if c.Accum > 1 {
		f = append(f, "--accum="+strconv.Itoa(c.Accum))
	}
	if sf := splitFlags(c); sf != nil {
		f = append(f, sf...)
	} else if c.Ranks > 1 {
		f = append(f, "--ranks="+strconv.Itoa(c.Ranks))
	}
	if c.Zero > 0 {
		f = append(f, "--zero="+strconv.Itoa(c.Zero))
	}
	if c.Offload {
		f = append(f, "--offload")
	}
	if c.Optimizer == plan.Adam8bitName { // the transformer example's --optimizer
		f = append(f, "--optimizer="+c.Optimizer)
	}
	if c.LoRA > 0 {
		f = append(f, "--lora="+strconv.Itoa(c.LoRA))
		if c.LoRABase != "" {
			f = append(f, "--lora-base="+c.LoRABase)
		}
	}
	if c.StepInBackward {
		f = append(f, "--step-in-backward")
		if m, err := plan.Lookup(c.Model); err == nil && m.Kind == "gpt" {
			f = append(f, "--clip=0") // the planner's GPT step clips only without it
		}
	}
	return append([]string{"--batch=" + strconv.Itoa(batch)}, f...)
}

func ampName(d dtype.DType) string {
	if d == dtype.F16 {
		return "fp16"
	}
	return "bf16"
}

// activationFlags are the example's --selective, --offload-activations and
// --activation-budget for c, the budget with the planner's rates (so the
// example chooses what the planner chose).
func activationFlags(c plan.Config) []string {
	var f []string
	if c.Selective {
		f = append(f, "--selective")
	}
	if c.OffloadActivations {
		f = append(f, "--offload-activations")
	}
	if c.ActivationBudget > 0 {
		r := c.Rates.Or(checkpoint.DefaultRates)
		f = append(f, "--activation-budget="+strconv.FormatInt(c.ActivationBudget, 10), "--flop-rate="+fmt.Sprint(r.FLOPS),
			"--memory-rate="+fmt.Sprint(r.Memory), "--copy-rate="+fmt.Sprint(r.Copy))
	}
	return f
}
