package main

import (
	"errors"
	"flag"
	"strconv"
	"strings"

	"github.com/headroom-ml/headroom/checkpoint"
	"github.com/headroom-ml/headroom/device"
	"github.com/headroom-ml/headroom/dtype"
	"github.com/headroom-ml/headroom/plan"
	"github.com/headroom-ml/headroom/train"
)

// modelFlags are the flags that describe a training step to plan.
type modelFlags struct {
	model, amp, checkpoint, budget, optimizer, capacity, device string
	actBudget                                                   string
	batch, seq, image, accum, ranks, zero, cudaMajor            int
	tp, pp, dp                                                  int
	schedule                                                    string
	prune                                                       float64
	ampParams, gradF32, offload, json, sequence                 bool
	selective, selectiveLean, fusedLoss, stepInBackward         bool
	attention                                                   string
	dropout                                                     float64
	offloadActs                                                 bool
	rates                                                       checkpoint.Rates // --flop-rate, --memory-rate, --copy-rate
	lora                                                        train.LoRAFlags
}

// register adds the flags to fs; techniques adds those of the memory
// techniques (plan has them; fit chooses them itself).
func (m *modelFlags) register(fs *flag.FlagSet, techniques bool) {
	fs.StringVar(&m.model, "model", "", "model: "+strings.Join(plan.Names(), ", "))
	fs.IntVar(&m.batch, "batch", 0, "global batch, split over --ranks, then into --accum micro-batches (default: the model's batch × ranks × accum: each micro-batch is the model's)")
	fs.IntVar(&m.seq, "seq", 0, "sequence length of a GPT (default: its context)")
	fs.IntVar(&m.image, "image", 0, "image side of a ResNet (default: the model's, 224 for resnet18…152)")
	fs.IntVar(&m.ranks, "ranks", 1, "data-parallel ranks")
	fs.IntVar(&m.zero, "zero", 0, "ZeRO stage 0-3: 1 shards the optimizer state over the ranks, 2 the gradients too, 3 the parameters too")
	fs.BoolVar(&m.offload, "offload", false, "with --zero ≥ 1: optimizer state and f32 master weights on a host device")
	fs.StringVar(&m.optimizer, "optimizer", "", "adamw, adam, sgd or adamw8bit (default: the model's: adamw for GPTs, sgd with momentum for ResNets)")
	fs.BoolVar(&m.json, "json", false, "print JSON")
	fs.StringVar(&m.device, "device", "cpu", "the device planned for: cpu or cuda (a cuda device holds cuBLAS's workspace from the start: 32 MiB on --cuda-major 9)")
	fs.StringVar(&m.attention, "attention", "fused", "a GPT's attention: fused (no T² matrix stored) or materialized (softmax(q·kᵀ/√D)·v op by op, the B×H×T×T weights stored, with attention dropout), as the transformer example's --attention")
	fs.Float64Var(&m.dropout, "dropout", 0, "a GPT's dropout probability (embedding, residual, MLP; attention too when materialized), as the transformer example's --dropout")
	fs.IntVar(&m.cudaMajor, "cuda-major", 0, "with --device cuda: the GPU's compute capability major (default 9: H100, H200; 8: A100; 7: V100)")
	m.accum, m.tp, m.pp = 1, 1, 1
	if !techniques {
		return
	}
	fs.StringVar(&m.amp, "amp", "", "autocast, as in the examples: fp16 or bf16 (--amp alone: bf16): f32 parameters, the forward in 16 bits")
	fs.BoolVar(&m.gradF32, "grad-f32", false, "with --amp-params: the 16-bit parameters' gradients in f32, accumulated and reduced in f32 (Megatron's main_grad: 6 + 12/DP bytes per parameter with --zero 1)")
	fs.BoolVar(&m.ampParams, "amp-params", false, "with --amp: parameters and gradients in the --amp dtype, f32 master weights and optimizer state (mixed precision as the ZeRO paper counts it; fp16 adds a loss scaler)")
	fs.Float64Var(&m.prune, "prune", 0, "plan the step of the model with this fraction of each block's units pruned (0.3 = 30%: ResNet channels, GPT heads and MLP units), as examples/resnet --prune; not with --zero 3 (pruning reads the whole model)")
	fs.StringVar(&m.checkpoint, "checkpoint", "", "activation checkpointing: N segments (--checkpoint alone: ⌈√n⌉)")
	fs.StringVar(&m.budget, "checkpoint-budget", "", "activation checkpointing under a byte budget, e.g. 2GiB")
	fs.BoolVar(&m.selective, "selective", false, "selective recomputation: keep each block's matmul and attention outputs, recompute the rest in backward (not with --checkpoint)")
	fs.BoolVar(&m.selectiveLean, "selective-lean", false, "with --selective: keep a product's output only when a later op saves it (less memory; a GPT block's c_attn and both c_proj products run again in backward)")
	fs.BoolVar(&m.offloadActs, "offload-activations", false, "activation offload: what each block but the last saves for backward on a host device cpu:100+r, prefetched 2 blocks ahead in backward, as the examples' --offload-activations (not with --checkpoint or --selective)")
	fs.BoolVar(&m.fusedLoss, "fused-loss", false, "a GPT's LM head and cross-entropy in chunks of 256 rows: the logits never exist, as the transformer example's --fused-loss")
	fs.BoolVar(&m.stepInBackward, "step-in-backward", false, "update each parameter inside backward as soon as its gradient is complete and free it there, as the examples' --step-in-backward (a GPT without clipping; not with ranks, tp or pp)")
	fs.IntVar(&m.accum, "accum", 1, "gradient accumulation: micro-batches per step")
	fs.StringVar(&m.capacity, "capacity", "", "each device's capacity, e.g. 24GiB or 80GB: says whether the step fits")
	fs.IntVar(&m.tp, "tp", 1, "tensor-parallel ranks of a GPT (heads and vocabulary divisible by it), as the transformer example's --tp")
	fs.IntVar(&m.pp, "pp", 1, "pipeline stages of a GPT (≤ its layers; the embeddings untied), as the transformer example's --pp; --accum micro-batches")
	fs.IntVar(&m.dp, "dp", 0, "data-parallel ranks: another name for --ranks (with --tp or --pp: not available yet above 1)")
	fs.BoolVar(&m.sequence, "sequence-parallel", false, "with --tp: sequence parallelism (LayerNorm, dropout and residual regions split by token rows)")
	fs.StringVar(&m.schedule, "pipe-schedule", "1f1b", "with --pp: 1f1b or gpipe")
	fs.StringVar(&m.actBudget, "activation-budget", "", "keep, selective recomputation, recomputation or offload per block so the activation peak stays under this size, e.g. 2GiB (GPT; not with --checkpoint, --checkpoint-budget, --selective or --offload-activations)")
	registerRates(fs, &m.rates)
	m.lora.RegisterLoRA(fs)
}

// config returns the planner's configuration; bad values are usage
// errors naming the flag.
func (m *modelFlags) config() (plan.Config, error) {
	if m.model == "" {
		return plan.Config{}, train.Usagef("--model is required (one of %s)", strings.Join(plan.Names(), ", "))
	}
	if _, err := plan.Lookup(m.model); err != nil {
		return plan.Config{}, train.Usagef("--model %q: unknown model (want one of %s)", m.model, strings.Join(plan.Names(), ", "))
	}
	c := plan.Config{Model: m.model, Batch: m.batch, Seq: m.seq, Image: m.image, Accum: m.accum, Ranks: m.ranks,
		Zero: m.zero, Offload: m.offload, Optimizer: m.optimizer, AMPParams: m.ampParams, GradF32: m.gradF32, Prune: m.prune,
		Selective: m.selective, SelectiveLean: m.selectiveLean, FusedLoss: m.fusedLoss, StepInBackward: m.stepInBackward, OffloadActivations: m.offloadActs, Device: m.device, CUDAMajor: m.cudaMajor, TP: m.tp, PP: m.pp, Sequence: m.sequence, Schedule: m.schedule}
	if err := m.checkRanges(); err != nil {
		return c, err
	}
	if err := m.loraConfig(&c); err != nil {
		return c, err
	}
	switch m.attention {
	case "fused", "materialized":
		c.MaterializedAttention, c.Dropout = m.attention == "materialized", m.dropout
	default:
		return c, train.Usagef("--attention %q: want fused or materialized", m.attention)
	}
	if m.dp != 0 {
		if m.ranks != 1 && m.ranks != m.dp {
			return c, train.Usagef("--dp %d and --ranks %d: the same number (data-parallel ranks): give one", m.dp, m.ranks)
		}
		c.Ranks = m.dp
	}
	var err error
	if c.AMP, err = ampFlag(m.amp, m.ampParams); err != nil {
		return c, err
	}
	if c.Checkpoint, c.CheckpointBudget, err = checkpointFlags(m.checkpoint, m.budget); err != nil {
		return c, err
	}
	if c.ActivationBudget, err = activationBudgetFlag(m.actBudget); err != nil {
		return c, err
	}
	if c.Rates, err = ratesFlag(m.rates); err != nil {
		return c, err
	}
	if m.capacity != "" {
		n, err := device.ParseBytes(m.capacity)
		if err != nil || n <= 0 {
			return c, train.Usagef("--capacity %q: want a size such as 24GiB or 80GB", m.capacity)
		}
		c.Capacity = n
	}
	var se *plan.SizeError
	if err := c.Validate(); errors.As(err, &se) {
		return c, train.Usagef("--%v", se)
	} else if err != nil {
		return c, train.Usagef("%s", strings.TrimPrefix(err.Error(), "plan: "))
	}
	return c, nil
}

// checkRanges checks the numeric flags' ranges.
func (m *modelFlags) checkRanges() error {
	for _, v := range []struct {
		name string
		n    int
	}{{"batch", m.batch}, {"seq", m.seq}, {"image", m.image}} {
		if v.n < 0 {
			return train.Usagef("--%s %d: want a positive number (or 0 for the model's default)", v.name, v.n)
		}
	}
	switch {
	case m.accum < 1:
		return train.Usagef("--accum %d: want ≥ 1", m.accum)
	case m.ranks < 1:
		return train.Usagef("--ranks %d: want ≥ 1", m.ranks)
	case m.dp < 0:
		return train.Usagef("--dp %d: want ≥ 1", m.dp)
	case m.tp < 1 || m.pp < 1:
		return train.Usagef("--tp %d, --pp %d: want each ≥ 1", m.tp, m.pp)
	case !(m.prune >= 0 && m.prune < 1):
		return train.Usagef("--prune %g: want a fraction in [0, 1)", m.prune)
	case m.zero < 0 || m.zero > 3:
		return train.Usagef("--zero %d: want 0, 1, 2 or 3", m.zero)
	case m.device != plan.CPU && m.device != plan.CUDA:
		return train.Usagef("--device %s: want cpu or cuda", m.device)
	case m.cudaMajor != 0 && m.device != plan.CUDA:
		return train.Usagef("--cuda-major %d needs --device cuda", m.cudaMajor)
	case m.cudaMajor < 0 || m.cudaMajor > 99:
		return train.Usagef("--cuda-major %d: want a compute capability major 1…99 (9: H100, H200)", m.cudaMajor)
	}
	return nil
}

// ampFlag reads --amp and checks --amp-params against it.
func ampFlag(amp string, params bool) (dtype.DType, error) {
	switch amp {
	case "":
		if params {
			return dtype.Invalid, train.Usagef("--amp-params needs --amp fp16 or --amp bf16")
		}
		return dtype.Invalid, nil
	case "bf16", "bfloat16":
		return dtype.BF16, nil
	case "fp16", "f16", "half":
		return dtype.F16, nil
	}
	return dtype.Invalid, train.Usagef("--amp %q: want fp16 or bf16", amp)
}

// checkpointFlags reads --checkpoint (segments, -1 for ⌈√n⌉) and
// --checkpoint-budget (bytes).
func checkpointFlags(segments, budget string) (int, int64, error) {
	n := 0
	switch segments {
	case "":
	case "sqrt":
		n = -1
	default:
		var err error
		if n, err = strconv.Atoi(segments); err != nil || n < 1 {
			return 0, 0, train.Usagef("--checkpoint %q: want a number of segments ≥ 1 (or no value for ⌈√n⌉)", segments)
		}
	}
	if budget == "" {
		return n, 0, nil
	}
	b, err := device.ParseBytes(budget)
	if err != nil || b <= 0 {
		return 0, 0, train.Usagef("--checkpoint-budget %q: want a size such as 2GiB", budget)
	}
	return n, b, nil
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
				return train.Usagef("--amp %q: want fp16 or bf16", pos[0])
			}
		case "checkpoint":
			if args[i+1] == pos[0] {
				return train.Usagef("--checkpoint %q: want a number of segments ≥ 1 (or no value for ⌈√n⌉)", pos[0])
			}
		}
	}
	return train.Usagef("unexpected arguments %q", pos)
}
