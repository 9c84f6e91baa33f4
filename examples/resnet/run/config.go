package run

import (
	"flag"
	"io"
	"slices"

	"github.com/headroom-ml/headroom/train"
)

// Config is the example's configuration: the common flags and its own.
type Config struct {
	train.Common
	// Model is small (the default, nn.SmallResNet) or resnet18 … resnet152.
	Model string
	// Dataset is mnist (default), cifar10 or synthetic.
	Dataset string
	// Stem is auto (small below 64 pixels, imagenet above), small or
	// imagenet.
	Stem string
	// EvalSamples limits the test images evaluated at the end (0: all).
	EvalSamples int
	// Optimizer is sgd (default), adamw or adamw8bit (--optimizer).
	Optimizer string
	// Momentum of SGD; WeightDecay of SGD (L2) or AdamW (decoupled).
	Momentum, WeightDecay float64
	// FineTune is the number of fine-tuning steps after --prune (0: a
	// quarter of the training steps, at most 200) or of --qat (0: 200).
	FineTune int
}

// Supported lists the technique flags this example implements.
var Supported = []string{"amp", "amp-params", "grad-f32", "checkpoint", "checkpoint-budget", "selective", "selective-lean", "offload-activations", "activation-budget", "accum", "ranks", "zero", "offload", "prune", "mem-alert", "quantize", "calibrate", "qat", "step-in-backward"}

var (
	models   = []string{"small", "resnet18", "resnet34", "resnet50", "resnet101", "resnet152"}
	datasets = []string{"mnist", "cifar10", "synthetic"}
	stems    = []string{"auto", "small", "imagenet"}
)

// Parse reads the command line into a Config and checks every flag (see
// train.Common.Parse): its errors are *train.UsageError values, but -help's
// flag.ErrHelp.
func Parse(args []string, stderr io.Writer) (*Config, error) {
	fs := flag.NewFlagSet("resnet", flag.ContinueOnError)
	c := &Config{}
	c.Register(fs, train.Defaults{Epochs: 2, Batch: 128, LR: 0.05})
	fs.StringVar(&c.Model, "model", "small", "small, resnet18, resnet34, resnet50, resnet101 or resnet152")
	fs.StringVar(&c.Dataset, "dataset", "mnist", "mnist, cifar10 or synthetic (generated: no --data)")
	fs.StringVar(&c.Stem, "stem", "auto", "auto, small (3×3 conv) or imagenet (7×7 conv and max-pool)")
	fs.IntVar(&c.EvalSamples, "eval-samples", 0, "test images to evaluate at the end, ≥ 0 (0: all)")
	fs.Float64Var(&c.Momentum, "momentum", 0.9, "SGD Nesterov momentum, in [0, 1) (0: plain SGD)")
	fs.Float64Var(&c.WeightDecay, "weight-decay", 5e-4, "weight decay (SGD's L2 term, AdamW's decoupled decay), ≥ 0 and finite")
	c.registerOptimizer(fs)
	fs.IntVar(&c.FineTune, "finetune", 0, "with --prune or --qat: fine-tuning steps, ≥ 0 (0: for --prune a quarter of the training steps, at most 200; for --qat 200)")
	err := c.Parse(fs, args, stderr, train.ParseOptions{
		Usage:      "usage: resnet [flags]\n\nTrains a ResNet and reports its memory by tag. Flags:",
		Supported:  Supported,
		AfterFlags: []string{"eval-samples", "finetune"},
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
		c.checkOptimizer(),
		train.Want(slices.Contains(models, c.Model), "model", c.Model, "small, resnet18, resnet34, resnet50, resnet101 or resnet152"),
		train.Want(slices.Contains(datasets, c.Dataset), "dataset", c.Dataset, "mnist, cifar10 or synthetic"),
		train.Want(c.Data == "" || c.Dataset != "synthetic", "data", c.Data, "no --data with --dataset synthetic (its images are generated)"),
		train.Want(slices.Contains(stems, c.Stem), "stem", c.Stem, "auto, small or imagenet"),
		train.Want(c.EvalSamples >= 0, "eval-samples", c.EvalSamples, "≥ 0 test images (0: all)"),
		train.Want(c.Momentum >= 0 && c.Momentum < 1, "momentum", c.Momentum, "a momentum in [0, 1)"),
		train.Want(c.WeightDecay >= 0 && train.Finite(c.WeightDecay), "weight-decay", c.WeightDecay, "a finite weight decay ≥ 0"),
		train.Want(c.FineTune >= 0, "finetune", c.FineTune, "≥ 0 fine-tuning steps (0: the default)"),
		train.Want(c.FineTune == 0 || c.Prune > 0 || c.QAT, "finetune", c.FineTune, "--prune or --qat, which it fine-tunes after"),
	)
}
