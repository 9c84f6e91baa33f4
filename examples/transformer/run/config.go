package run

import (
	"flag"
	"fmt"
	"io"

	"github.com/headroom-ml/headroom/nn"
	"github.com/headroom-ml/headroom/train"
)

// Config is the example's configuration: the common flags and its own.
type Config struct {
	train.Common
	// The model: nn.GPTConfig's fields, vocabulary 256 (bytes).
	Layers, Width, Heads, Context int
	Dropout                       float64
	Share                         bool
	// Attention is "fused" (autograd.ScaledDotProductAttention) or
	// "materialized" (nn.GPTConfig.MaterializedAttention), --attention.
	Attention string
	// Tie shares the token embedding with the LM head (untie it for --pp).
	Tie bool
	// CorpusSlice is "lo:hi", the fraction of the corpus trained and
	// validated on (--corpus-slice; default 0:1, all of it).
	CorpusSlice string
	// ValFraction is the share of the corpus held out for validation, as
	// pieces of valChunk bytes spread evenly over it (data.Text.SplitSpread).
	ValFraction float64
	// EvalBatches is the number of validation batches of the final loss.
	EvalBatches int
	// Sample is the number of bytes to generate at the end (0: none).
	Sample int
	// Prompt starts the generated sample.
	Prompt string
	// WeightDecay of AdamW and the gradient-norm clip.
	WeightDecay, Clip float64
	// Optimizer is "adamw" or "adamw8bit" (--optimizer).
	Optimizer string
	// LoRAFlags fine-tune adapters over the frozen model (--lora R).
	train.LoRAFlags
}

// Supported lists the technique flags this example implements.
var Supported = []string{"amp", "amp-params", "grad-f32", "checkpoint", "checkpoint-budget", "selective", "selective-lean", "offload-activations", "activation-budget", "fused-loss", "accum", "ranks", "zero", "offload", "mem-alert", "quantize", "tp", "pp", "sequence-parallel", "pipe-schedule", "step-in-backward"}

// Parse reads the command line into a Config and checks every flag (see
// train.Common.Parse): its errors are *train.UsageError values, but -help's
// flag.ErrHelp.
func Parse(args []string, stderr io.Writer) (*Config, error) {
	fs := flag.NewFlagSet("transformer", flag.ContinueOnError)
	c := &Config{}
	c.Register(fs, train.Defaults{Steps: 2000, Batch: 32, LR: 3e-3})
	fs.IntVar(&c.Layers, "layers", 4, "transformer blocks, ≥ 1")
	fs.IntVar(&c.Width, "width", 128, "model width (embedding size), ≥ 1 and a multiple of --heads")
	fs.IntVar(&c.Heads, "heads", 4, "attention heads, ≥ 1, dividing --width")
	fs.IntVar(&c.Context, "context", 64, "context length in bytes, ≥ 1 and shorter than the training and validation texts")
	fs.Float64Var(&c.Dropout, "dropout", 0, "dropout probability, in [0, 1)")
	fs.BoolVar(&c.Share, "share-layers", false, "one block's weights serve all layers (ALBERT)")
	fs.StringVar(&c.Attention, "attention", "fused", "fused (no context×context matrix stored, no attention dropout) or materialized (softmax(q·kᵀ/√D)·v op by op, its batch×heads×context² weights stored, --dropout on them too), not with --tp or --pp")
	fs.BoolVar(&c.Tie, "tie-embeddings", true, "the LM head is the token embedding's weight (default false with --pp, where one weight cannot be on two stages)")
	fs.Float64Var(&c.ValFraction, "val-fraction", 0.01, "share of the corpus held out for validation, in (0, 1), in 16 KiB pieces spread over it")
	fs.IntVar(&c.EvalBatches, "eval-batches", 50, "validation batches for the final loss, ≥ 1")
	fs.IntVar(&c.Sample, "sample", 200, "bytes to generate at the end, ≥ 0")
	fs.StringVar(&c.Prompt, "prompt", "func main() {\n", "start of the generated sample, at least one byte with --sample")
	fs.Float64Var(&c.WeightDecay, "weight-decay", 0.1, "AdamW weight decay, ≥ 0 and finite")
	fs.Float64Var(&c.Clip, "clip", 1, "gradient-norm clip, ≥ 0 and finite (0: none)")
	c.registerOptimizer(fs)
	c.registerCorpus(fs)
	c.RegisterLoRA(fs)
	err := c.Parse(fs, args, stderr, train.ParseOptions{
		Usage:      "usage: transformer [flags]\n\nTrains a byte-level GPT and reports its memory by tag. Flags:",
		Supported:  Supported,
		AfterFlags: []string{"eval-batches", "sample", "prompt"},
		Check:      c.check,
	})
	if err != nil {
		return nil, err
	}
	return c, nil
}

// check checks the example's own flags.
func (c *Config) check() error {
	return train.First(
		c.checkSplit(),
		c.checkCorpus(),
		c.checkOptimizer(),
		c.checkLoRA(),
		train.Want(c.Layers >= 1, "layers", c.Layers, "≥ 1 transformer blocks"),
		train.Want(c.Width >= 1, "width", c.Width, "a model width ≥ 1"),
		train.Want(c.Heads >= 1, "heads", c.Heads, "≥ 1 attention heads"),
		train.Want(c.Width%max(c.Heads, 1) == 0, "heads", c.Heads, fmt.Sprintf("a number of heads that divides --width %d", c.Width)),
		train.Want(c.Context >= 1, "context", c.Context, "a context of ≥ 1 bytes"),
		train.Want(c.Dropout >= 0 && c.Dropout < 1, "dropout", c.Dropout, "a probability in [0, 1)"),
		train.Want(c.Attention == "fused" || c.Attention == "materialized", "attention", c.Attention, "fused or materialized"),
		train.Want(c.Attention == "fused" || c.TP <= 1 && c.PP <= 1, "attention", c.Attention, "fused with --tp or --pp (their blocks attend fused)"),
		train.Want(c.ValFraction > 0 && c.ValFraction < 1, "val-fraction", c.ValFraction, "a fraction in (0, 1)"),
		train.Want(c.EvalBatches >= 1, "eval-batches", c.EvalBatches, "≥ 1 validation batches"),
		train.Want(c.Sample >= 0, "sample", c.Sample, "≥ 0 bytes to generate"),
		train.Want(c.Sample == 0 || c.Prompt != "", "prompt", `""`, "at least one byte to start --sample's text"),
		train.Want(c.WeightDecay >= 0 && train.Finite(c.WeightDecay), "weight-decay", c.WeightDecay, "a finite weight decay ≥ 0"),
		train.Want(c.Clip >= 0 && train.Finite(c.Clip), "clip", c.Clip, "a finite gradient-norm limit ≥ 0 (0: no clipping)"),
		train.Want(c.Clip == 0 || !c.StepInBackward, "clip", c.Clip, "0 with --step-in-backward (the global norm needs every gradient before the first update)"),
		// A batch's windows and targets, int64 each, are built on the host
		// (validation batches take --batch whole).
		train.FitsHost("batch", c.Batch, 16*float64(c.Batch)*float64(c.Context)),
	)
}

// GPT returns the model configuration.
func (c *Config) GPT() nn.GPTConfig {
	return nn.GPTConfig{Vocab: 256, Context: c.Context, Layers: c.Layers, Heads: c.Heads, Width: c.Width,
		Dropout: c.Dropout, Bias: true, TieEmbeddings: c.Tie, ShareLayers: c.Share, MaterializedAttention: c.Attention == "materialized"}
}

// valChunk is the size of the validation pieces: 16 KiB spread over the
// corpus, so that validation reads every part of it (see
// data.Text.SplitSpread) in pieces much longer than a context.
const valChunk = 16 << 10
