package plan

import (
	"fmt"
	"github.com/headroom-ml/headroom/checkpoint"

	"github.com/headroom-ml/headroom/dtype"
)

// Config says what to plan. Zero fields take the model's defaults. Its
// vocabulary is the example programs' flags: AMP is --amp, AMPParams
// --amp-params, and so on.
type Config struct {
	Model string
	// Batch is the global batch (split over Ranks, then into Accum
	// micro-batches; default: the model's batch per rank and micro-batch,
	// times Ranks × Accum); Seq the sequence length of a GPT (default:
	// its context); Image the side of a ResNet's input (default: the
	// model's).
	Batch, Seq, Image int
	// AMP is the 16-bit dtype (Invalid: F32 training). Alone it is
	// autocast, as --amp in the examples: F32 parameters, gradients and
	// optimizer state, the forward in AMP. AMPParams makes it mixed
	// precision as the ZeRO paper counts it (--amp-params): parameters and
	// gradients in AMP, F32 master weights and Adam state in the
	// optimizer, and for F16 a loss scaler.
	AMP       dtype.DType
	AMPParams bool
	// GradF32 keeps the 16-bit parameters' gradients in F32 (--grad-f32,
	// amp.MainGradsF32, Megatron's main_grad): 2 + 4 bytes per parameter
	// of parameter and gradient instead of 2 + 2. Needs AMPParams.
	GradF32 bool
	// Checkpoint cuts the blocks into N checkpointed segments (-1: ⌈√n⌉);
	// CheckpointBudget plans the segments under a byte budget instead.
	Checkpoint       int
	CheckpointBudget int64
	// Selective runs each block in a checkpoint.Selective region
	// (--selective): matmul and attention outputs kept, the rest recomputed.
	// SelectiveLean (--selective-lean) keeps a product's output only when
	// a later op saves it (checkpoint.LeanPolicy). Needs Selective.
	Selective     bool
	SelectiveLean bool
	// FusedLoss computes a GPT's LM head and loss in row chunks
	// (--fused-loss, nn.GPT.FusedLoss): the logits never exist.
	FusedLoss bool
	// Dropout is a GPT's dropout probability (--dropout; 0 by default,
	// GPT-2 trained with 0.1): embedding, residual and MLP dropout, and the
	// attention dropout with MaterializedAttention.
	Dropout float64
	// MaterializedAttention computes a GPT's attention op by op, the
	// (B, H, T, T) weights stored (--attention materialized,
	// nn.GPTConfig.MaterializedAttention); off: the fused attention.
	MaterializedAttention bool
	// StepInBackward updates each parameter inside the last micro-batch's
	// backward and frees its gradient there (--step-in-backward,
	// train.Stepper.StepInBackward); a GPT is then planned without
	// clipping, as the transformer example needs --clip 0 with it.
	StepInBackward bool
	// OffloadActivations moves what each block but the last saves for
	// backward to the host cpu:100+r (--offload-activations,
	// checkpoint.Offload): the host's activation bytes join Host.
	OffloadActivations bool
	// ActivationBudget chooses keep, selective recomputation, recomputation
	// or offload per GPT block so the activation peak stays under this many
	// bytes (--activation-budget, checkpoint.ModeBudget, solved on meta).
	ActivationBudget int64
	activationModes  []checkpoint.Mode // the solved modes
	fitBudget        bool              // Fit's "activation budget": the budget the capacity leaves
	// Rates are the ActivationBudget's cost rates (fields left 0:
	// checkpoint.DefaultRates'; --flop-rate, --memory-rate, --copy-rate).
	Rates checkpoint.Rates
	// Accum is the number of micro-batches per step (default 1).
	Accum int
	// Ranks, Zero (0-3) and Offload: data parallelism.
	Ranks   int
	Zero    int
	Offload bool
	// TP tensor-parallel ranks and PP pipeline stages of a GPT (0: 1):
	// TP·PP ranks, each building its part of the model (train.SplitGPT:
	// parallel.NewTensorGPT or parallel.NewPipe), one of the two above 1
	// for now, with Ranks (the data-parallel copies) 1. Sequence turns on
	// sequence parallelism in the TP group; Schedule is the pipeline's,
	// "1f1b" (the default) or "gpipe", over Accum micro-batches. Under PP
	// the embeddings are untied: the last stage holds its own LM head, as
	// Megatron's last stage holds its copy of the word embeddings.
	TP, PP   int
	Sequence bool
	Schedule string
	// Prune removes this fraction of the units inside each block before
	// training, as examples/resnet --prune does (in [0, 1)): a ResNet's
	// inner channels, a GPT's attention heads and MLP hidden units (both
	// at this fraction). The step planned is the pruned model's. Not
	// with Zero 3, which never holds the whole model that pruning reads.
	Prune float64
	// Optimizer is "adamw", "adam", "sgd" or "adamw8bit" (default: the model's).
	Optimizer string
	// LoRA fine-tunes rank-LoRA adapters over the frozen GPT (package lora;
	// 0: every parameter trained); LoRABase is "float" (default) or
	// "int8", LoRATargets the adapted block Linears (nil: all): the
	// transformer example's --lora, --lora-base, --lora-targets.
	LoRA        int
	LoRABase    string
	LoRATargets []string
	// Steps is the number of steps run (default 2: the first allocates
	// the optimizer's state, the second shows the steady state).
	Steps int
	// Capacity is each compute device's capacity (0: unlimited, that is
	// MaxBytes).
	Capacity int64
	// Timeline records rank 0's memory timeline during the last step.
	Timeline bool
	// Device is the kind of device planned for: "cpu" (the default) or
	// "cuda". A cuda plan's meta devices first allocate what a cuda
	// device holds from Open on (Resident: cuBLAS's workspace), so the
	// plan accounts what the GPU allocates, byte for byte; CUDAMajor is
	// the GPU's compute capability major (default DefaultCUDAMajor, 9:
	// H100, H200; 8 is A100, 7 V100), which sets the workspace's size.
	Device    string
	CUDAMajor int

	// measure runs the same step on real devices of kind Device: the
	// measurement a prediction is checked against.
	measure bool
	// full simulates every data-parallel copy of a split model's ranks,
	// not one representative per (tp, pp) coordinate (the test of
	// representatives).
	full bool
}

// MaxBytes is the most a plan counts on one device: 2^62 bytes (4 EiB).
// Byte counts are int64; keeping each below a quarter of their range
// keeps every sum of two exact. A step that needs more is an error, not a
// prediction.
const MaxBytes = 1 << 62

// SizeError is a configuration whose tensors are too large to count: the
// largest tensor of its step would hold about Bytes bytes, more than
// MaxBytes. Field names the setting to lower ("batch", "image").
type SizeError struct {
	Field string
	Value int
	Bytes float64
}

func (e *SizeError) Error() string {
	return fmt.Sprintf("%s %d: the step's largest tensor would hold about %.3g bytes, more than the 4 EiB (2^62 bytes) a plan counts on one device",
		e.Field, e.Value, e.Bytes)
}

// Validate checks c as Predict would (the model, the batch against ranks
// and micro-batches, the sizes, the stage, the dtype, the optimizer…)
// without running anything.
func (c Config) Validate() error {
	_, _, err := c.resolved()
	return err
}

// resolved fills in defaults and checks c.
func (c Config) resolved() (Config, Model, error) {
	m, err := Lookup(c.Model)
	if err != nil {
		return c, m, err
	}
	if c.Accum == 0 {
		c.Accum = 1
	}
	if c.Ranks == 0 {
		c.Ranks = 1
	}
	if c.Steps == 0 {
		c.Steps = 2
	}
	c.TP, c.PP = max(c.TP, 1), max(c.PP, 1)
	if c.Schedule == "" {
		c.Schedule = "1f1b"
	}
	if c.Device == "" {
		c.Device = CPU
	}
	if c.Device == CUDA && c.CUDAMajor == 0 {
		c.CUDAMajor = DefaultCUDAMajor
	}
	if c.Batch == 0 {
		c.Batch = m.Batch * c.Ranks * c.Accum
	}
	if c.Optimizer == "" {
		c.Optimizer = m.Optimizer
	}
	if m.Kind == "gpt" && c.Seq == 0 {
		c.Seq = m.GPT.Context
	} else if m.Kind != "gpt" && c.Image == 0 {
		c.Image = m.Image
	}
	m.GPT.Dropout, m.GPT.MaterializedAttention = c.Dropout, c.MaterializedAttention
	if err := c.check(m); err != nil {
		return c, m, fmt.Errorf("plan: %w", err)
	}
	return c, m, nil
}

// check checks a configuration with its defaults filled in.
func (c Config) check(m Model) error {
	switch {
	case m.Kind == "gpt" && (c.Seq > m.GPT.Context || c.Seq < 1):
		return fmt.Errorf("sequence %d for %s: want 1…%d (its context)", c.Seq, m.Name, m.GPT.Context)
	case m.Kind != "gpt" && c.Image < 1:
		return fmt.Errorf("image %d for %s: want ≥ 1", c.Image, m.Name)
	case c.Accum < 1 || c.Ranks < 1 || c.Steps < 1:
		return fmt.Errorf("accum %d, ranks %d, steps %d: want each ≥ 1", c.Accum, c.Ranks, c.Steps)
	case c.Batch < 1 || c.Batch%(c.Ranks*c.Accum) != 0:
		return fmt.Errorf("batch %d must be a positive multiple of ranks × accum = %d", c.Batch, c.Ranks*c.Accum)
	case c.Zero < 0 || c.Zero > 3:
		return fmt.Errorf("ZeRO stage %d: want 0, 1, 2 or 3", c.Zero)
	case c.Offload && c.Zero == 0:
		return fmt.Errorf("offload needs ZeRO stage 1 or more")
	case c.AMP != dtype.Invalid && !c.AMP.IsLowPrecision():
		return fmt.Errorf("amp dtype %s: want f16 or bf16", c.AMP)
	case c.AMPParams && c.AMP == dtype.Invalid:
		return fmt.Errorf("amp params need an amp dtype (f16 or bf16)")
	case c.GradF32 && !c.AMPParams:
		return fmt.Errorf("f32 gradients need amp params (without them the parameters, and their gradients, are f32 already)")
	case c.SelectiveLean && !c.Selective:
		return fmt.Errorf("lean selective recomputation without selective recomputation: give both")
	case c.Selective && (c.Checkpoint != 0 || c.CheckpointBudget != 0):
		return fmt.Errorf("selective recomputation with checkpointing: choose one")
	case c.OffloadActivations && (c.Selective || c.Checkpoint != 0 || c.CheckpointBudget != 0):
		return fmt.Errorf("activation offload with selective recomputation or checkpointing: choose one")
	case c.FusedLoss && m.Kind != "gpt":
		return fmt.Errorf("fused loss for %s: it fuses a GPT's LM head with the loss; %s has none", m.Name, m.Name)
	case (c.Dropout != 0 || c.MaterializedAttention) && m.Kind != "gpt":
		return fmt.Errorf("dropout %g, materialized attention %v for %s: both describe a GPT", c.Dropout, c.MaterializedAttention, m.Name)
	case !(c.Dropout >= 0 && c.Dropout < 1):
		return fmt.Errorf("dropout %g: want 0 ≤ dropout < 1", c.Dropout)
	case c.MaterializedAttention && (c.TP > 1 || c.PP > 1):
		return fmt.Errorf("materialized attention with tp %d, pp %d: not available yet (the tensor-parallel blocks attend fused)", c.TP, c.PP)
	case c.FusedLoss && (c.TP > 1 || c.PP > 1):
		return fmt.Errorf("fused loss with tp %d, pp %d: not available yet (the vocabulary-parallel head has its own loss)", c.TP, c.PP)
	case c.ActivationBudget < 0 || c.ActivationBudget > 0 && (c.Selective || c.OffloadActivations || c.Checkpoint != 0 || c.CheckpointBudget != 0):
		return fmt.Errorf("activation budget %d B with selective recomputation, activation offload or checkpointing: want a positive budget, alone", c.ActivationBudget)
	case c.Checkpoint != 0 && c.CheckpointBudget != 0:
		return fmt.Errorf("checkpoint segments and a checkpoint budget: choose one")
	case !(c.Prune >= 0 && c.Prune < 1):
		return fmt.Errorf("prune fraction %g: want 0 ≤ fraction < 1", c.Prune)
	case c.Prune > 0 && c.Zero == 3:
		return fmt.Errorf("prune with ZeRO stage 3: pruning ranks each block's units by the magnitudes of the whole model's weights, which a ZeRO-3 rank never holds (each rank would build the whole model to prune it); plan the pruned model with ZeRO stage 0, 1 or 2")
	case c.Capacity < 0 || c.Capacity > MaxBytes:
		return fmt.Errorf("capacity %d bytes: want 0 (unlimited) … %d (2^62)", c.Capacity, int64(MaxBytes))
	}
	switch c.Optimizer {
	case "adamw", "adam", "sgd", Adam8bitName:
	default:
		return fmt.Errorf("optimizer %q: want adamw, adam, sgd or adamw8bit", c.Optimizer)
	}
	if err := c.checkStepInBackward(); err != nil {
		return err
	}
	if err := c.checkLoRA(m); err != nil {
		return err
	}
	if err := c.checkDevice(); err != nil {
		return err
	}
	if err := c.checkSplit(m); err != nil {
		return err
	}
	return c.checkSizes(m)
}

// largestPerSample bounds the bytes one sample adds to any single tensor
// of c's step (TestLargestTensorBound checks it on every model the
// planner knows, with a margin of 2 to 8): 8 bytes, the widest element
// (I64 indices, F64 statistics), times, per token of a GPT, the larger of
// the logits (Vocab) and the MLP's hidden layer (4·Width); per input
// element of a ResNet, 32 (the widest layer at full resolution has 16
// channels per input channel), plus 8192 for small images, where the
// deepest layers' channels outnumber the pixels.
func largestPerSample(c Config, m Model) float64 {
	const widest = 8
	if m.Kind == "gpt" {
		return widest * float64(c.Seq) * float64(max(m.GPT.Vocab, 4*m.GPT.Width))
	}
	return widest * (32*float64(max(m.Channels, 1))*float64(c.Image)*float64(c.Image) + 8192)
}

// checkSizes refuses a step whose largest tensor would pass MaxBytes,
// counted in float64 so that the check itself cannot overflow: the batch,
// the sequence and the image size enter the products of its shapes.
func (c Config) checkSizes(m Model) error {
	perSample := largestPerSample(c, m)
	if m.Kind != "gpt" && perSample > MaxBytes {
		return &SizeError{Field: "image", Value: c.Image, Bytes: perSample}
	}
	if b := float64(c.Batch/(c.Ranks*c.Accum)) * perSample; b > MaxBytes {
		return &SizeError{Field: "batch", Value: c.Batch, Bytes: b}
	}
	return nil
}
