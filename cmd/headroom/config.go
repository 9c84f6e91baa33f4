package main

import (
	"flag"
	"strconv"
	"strings"

	"github.com/headroom-ml/headroom/device"
	"github.com/headroom-ml/headroom/dtype"
	"github.com/headroom-ml/headroom/plan"
	"github.com/headroom-ml/headroom/train"
)

// modelFlags are the flags that describe a training step to plan.
type modelFlags struct {
	model, amp, checkpoint, budget, optimizer, capacity string
	batch, seq, image, accum, ranks, zero               int
	autocast, offload, json                             bool
}

// register adds the flags to fs; techniques adds those of the memory
// techniques (plan has them; fit chooses them itself).
func (m *modelFlags) register(fs *flag.FlagSet, techniques bool) {
	fs.StringVar(&m.model, "model", "", "model: "+strings.Join(plan.Names(), ", "))
	fs.IntVar(&m.batch, "batch", 0, "global batch, split over --ranks, then into --accum micro-batches (default: the model's batch × ranks × accum)")
	fs.IntVar(&m.seq, "seq", 0, "sequence length of a GPT (default: its context)")
	fs.IntVar(&m.image, "image", 0, "image side of a ResNet (default: the model's, 224 for resnet18…152)")
	fs.IntVar(&m.ranks, "ranks", 1, "data-parallel ranks")
	fs.IntVar(&m.zero, "zero", 0, "ZeRO stage 0-3: 1 shards the optimizer state over the ranks, 2 the gradients too, 3 the parameters too")
	fs.BoolVar(&m.offload, "offload", false, "with --zero ≥ 1: optimizer state and f32 master weights on a host device")
	fs.StringVar(&m.optimizer, "optimizer", "", "adamw, adam or sgd (default: the model's: adamw for GPTs, sgd with momentum for ResNets)")
	fs.BoolVar(&m.json, "json", false, "print JSON")
	if !techniques {
		return
	}
	fs.StringVar(&m.amp, "amp", "", "fp16 or bf16 (--amp alone: bf16): mixed precision as ZeRO counts it — 16-bit parameters and gradients, f32 master weights and optimizer state. With --autocast: f32 parameters, the forward under autocast instead")
	fs.BoolVar(&m.autocast, "autocast", false, "with --amp: keep f32 parameters and run the forward under autocast in the --amp dtype")
	fs.StringVar(&m.checkpoint, "checkpoint", "", "activation checkpointing: N segments (--checkpoint alone: ⌈√n⌉)")
	fs.StringVar(&m.budget, "checkpoint-budget", "", "activation checkpointing under a byte budget, e.g. 2GiB")
	fs.IntVar(&m.accum, "accum", 1, "gradient accumulation: micro-batches per step")
	fs.StringVar(&m.capacity, "capacity", "", "each device's capacity, e.g. 24GiB or 80GB: says whether the step fits")
}

// config returns the planner's configuration; bad values are usage
// errors naming the flag.
func (m *modelFlags) config() (plan.Config, error) {
	if m.model == "" {
		return plan.Config{}, usagef("--model is required (one of %s)", strings.Join(plan.Names(), ", "))
	}
	model, err := plan.Lookup(m.model)
	if err != nil {
		return plan.Config{}, usagef("--model %q: unknown model (want one of %s)", m.model, strings.Join(plan.Names(), ", "))
	}
	m.accum = max(m.accum, 1) // fit has no --accum
	c := plan.Config{Model: m.model, Batch: m.batch, Seq: m.seq, Image: m.image, Accum: m.accum, Ranks: m.ranks,
		Zero: m.zero, Offload: m.offload, Optimizer: m.optimizer, Autocast: m.autocast}
	for _, v := range []struct {
		name string
		n    int
	}{{"batch", m.batch}, {"seq", m.seq}, {"image", m.image}} {
		if v.n < 0 {
			return c, usagef("--%s %d: want a positive number (or 0 for the model's default)", v.name, v.n)
		}
	}
	if m.accum < 1 {
		return c, usagef("--accum %d: want ≥ 1", m.accum)
	}
	if m.ranks < 1 {
		return c, usagef("--ranks %d: want ≥ 1", m.ranks)
	}
	if c.Batch == 0 {
		// Each rank's micro-batch is the model's default batch.
		c.Batch = model.Batch * m.ranks * m.accum
	}
	if m.zero < 0 || m.zero > 3 {
		return c, usagef("--zero %d: want 0, 1, 2 or 3", m.zero)
	}
	switch m.amp {
	case "":
		if m.autocast {
			return c, usagef("--autocast needs --amp fp16 or --amp bf16")
		}
	case "bf16", "bfloat16":
		c.AMP = dtype.BF16
	case "fp16", "f16", "half":
		c.AMP = dtype.F16
	default:
		return c, usagef("--amp %q: want fp16 or bf16", m.amp)
	}
	switch m.checkpoint {
	case "":
	case "sqrt":
		c.Checkpoint = -1
	default:
		n, err := strconv.Atoi(m.checkpoint)
		if err != nil || n < 1 {
			return c, usagef("--checkpoint %q: want a number of segments ≥ 1 (or no value for ⌈√n⌉)", m.checkpoint)
		}
		c.Checkpoint = n
	}
	if m.budget != "" {
		n, err := device.ParseBytes(m.budget)
		if err != nil || n <= 0 {
			return c, usagef("--checkpoint-budget %q: want a size such as 2GiB", m.budget)
		}
		c.CheckpointBudget = n
	}
	if m.capacity != "" {
		n, err := device.ParseBytes(m.capacity)
		if err != nil || n <= 0 {
			return c, usagef("--capacity %q: want a size such as 24GiB or 80GB", m.capacity)
		}
		c.Capacity = n
	}
	if err := c.Validate(); err != nil {
		return c, usageError{strings.TrimPrefix(err.Error(), "plan: ")}
	}
	return c, nil
}

// normalize lets --amp and --checkpoint take their value after a space or
// none at all.
func normalize(args []string) []string { return train.NormalizeArgs(args, train.Accept) }

// stray explains positional arguments left over by plan's flags: a word
// after --amp or --checkpoint that is not their value.
func stray(args, pos []string) error {
	for i := 0; i+1 < len(args); i++ {
		switch strings.TrimLeft(args[i], "-") {
		case "amp":
			if args[i+1] == pos[0] {
				return usagef("--amp %q: want fp16 or bf16", pos[0])
			}
		case "checkpoint":
			if args[i+1] == pos[0] {
				return usagef("--checkpoint %q: want a number of segments ≥ 1 (or no value for ⌈√n⌉)", pos[0])
			}
		}
	}
	return usagef("unexpected arguments %q", pos)
}
