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
}

// Supported lists the technique flags this example implements.
var Supported = []string{"amp", "amp-params", "checkpoint", "checkpoint-budget", "accum", "ranks", "zero", "offload", "mem-alert", "quantize"}

// Parse reads the command line into a Config.
func Parse(args []string, stderr io.Writer) (*Config, error) {
	fs := flag.NewFlagSet("transformer", flag.ContinueOnError)
	fs.SetOutput(stderr)
	c := &Config{}
	c.Register(fs, train.Defaults{Steps: 2000, Batch: 32, LR: 3e-3})
	fs.IntVar(&c.Layers, "layers", 4, "transformer blocks")
	fs.IntVar(&c.Width, "width", 128, "model width (embedding size)")
	fs.IntVar(&c.Heads, "heads", 4, "attention heads")
	fs.IntVar(&c.Context, "context", 64, "context length in bytes")
	fs.Float64Var(&c.Dropout, "dropout", 0, "dropout probability")
	fs.BoolVar(&c.Share, "share-layers", false, "one block's weights serve all layers (ALBERT)")
	fs.Float64Var(&c.ValFraction, "val-fraction", 0.01, "share of the corpus held out for validation, in 16 KiB pieces spread over it")
	fs.IntVar(&c.EvalBatches, "eval-batches", 50, "validation batches for the final loss")
	fs.IntVar(&c.Sample, "sample", 200, "bytes to generate at the end")
	fs.StringVar(&c.Prompt, "prompt", "func main() {\n", "start of the generated sample")
	fs.Float64Var(&c.WeightDecay, "weight-decay", 0.1, "AdamW weight decay")
	fs.Float64Var(&c.Clip, "clip", 1, "gradient-norm clip (0: none)")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: transformer [flags]\n\nTrains a byte-level GPT and reports its memory by tag. Flags:")
		fs.PrintDefaults()
	}
	if err := fs.Parse(train.NormalizeArgs(args, train.Accept)); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	if err := c.Check(Supported...); err != nil {
		return nil, err
	}
	if c.Accum < 1 {
		return nil, fmt.Errorf("--accum %d: want ≥ 1", c.Accum)
	}
	if c.Quantize != "" && (c.Quantize != "int8" || c.Parallel() || c.AMPParams || c.Save != "") {
		return nil, fmt.Errorf("--quantize %q: want int8, without data parallelism, --amp-params or --save", c.Quantize)
	}
	if !(c.ValFraction > 0 && c.ValFraction < 1) {
		return nil, fmt.Errorf("--val-fraction %g: want a value in (0, 1)", c.ValFraction)
	}
	return c, nil
}

// GPT returns the model configuration.
func (c *Config) GPT() nn.GPTConfig {
	return nn.GPTConfig{Vocab: 256, Context: c.Context, Layers: c.Layers, Heads: c.Heads, Width: c.Width,
		Dropout: c.Dropout, Bias: true, TieEmbeddings: true, ShareLayers: c.Share}
}

// valChunk is the size of the validation pieces: 16 KiB spread over the
// corpus, so that validation reads every part of it (see
// data.Text.SplitSpread) in pieces much longer than a context.
const valChunk = 16 << 10
