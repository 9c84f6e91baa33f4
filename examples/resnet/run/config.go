package run

import (
	"flag"
	"fmt"
	"io"

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
	// Momentum and WeightDecay of the SGD optimizer.
	Momentum, WeightDecay float64
	// FineTune is the number of fine-tuning steps after --prune (0: a
	// quarter of the training steps, at most 200) or of --qat (0: 200).
	FineTune int
}

// Supported lists the technique flags this example implements.
var Supported = []string{"amp", "amp-params", "checkpoint", "checkpoint-budget", "accum", "ranks", "zero", "offload", "prune", "mem-alert", "quantize", "calibrate", "qat"}

// Parse reads the command line into a Config.
func Parse(args []string, stderr io.Writer) (*Config, error) {
	fs := flag.NewFlagSet("resnet", flag.ContinueOnError)
	fs.SetOutput(stderr)
	c := &Config{}
	c.Register(fs, train.Defaults{Epochs: 2, Batch: 128, LR: 0.05})
	fs.StringVar(&c.Model, "model", "small", "small, resnet18, resnet34, resnet50, resnet101 or resnet152")
	fs.StringVar(&c.Dataset, "dataset", "mnist", "mnist, cifar10 or synthetic")
	fs.StringVar(&c.Stem, "stem", "auto", "auto, small (3×3 conv) or imagenet (7×7 conv and max-pool)")
	fs.IntVar(&c.EvalSamples, "eval-samples", 0, "test images to evaluate at the end (0: all)")
	fs.Float64Var(&c.Momentum, "momentum", 0.9, "SGD Nesterov momentum")
	fs.Float64Var(&c.WeightDecay, "weight-decay", 5e-4, "SGD weight decay")
	fs.IntVar(&c.FineTune, "finetune", 0, "fine-tuning steps after --prune (0: a quarter of the training steps, at most 200) or of --qat (0: 200)")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: resnet [flags]\n\nTrains a ResNet and reports its memory by tag. Flags:")
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
	switch c.Model {
	case "small", "resnet18", "resnet34", "resnet50", "resnet101", "resnet152":
	default:
		return nil, fmt.Errorf("--model %q: want small or resnet18, resnet34, resnet50, resnet101, resnet152", c.Model)
	}
	switch c.Dataset {
	case "mnist", "cifar10", "synthetic":
	default:
		return nil, fmt.Errorf("--dataset %q: want mnist, cifar10 or synthetic", c.Dataset)
	}
	switch c.Stem {
	case "auto", "small", "imagenet":
	default:
		return nil, fmt.Errorf("--stem %q: want auto, small or imagenet", c.Stem)
	}
	if c.Accum < 1 {
		return nil, fmt.Errorf("--accum %d: want ≥ 1", c.Accum)
	}
	if c.Quantize != "" && c.Quantize != "int8" {
		return nil, fmt.Errorf("--quantize %q: want int8", c.Quantize)
	}
	if (c.Calibrate != 0 || c.QAT) && c.Quantize == "" {
		return nil, fmt.Errorf("--calibrate and --qat need --quantize int8")
	}
	if c.Calibrate != 0 && c.QAT {
		return nil, fmt.Errorf("--calibrate and --qat: choose one (QAT records the ranges itself)")
	}
	if c.Quantize != "" && (c.Parallel() || c.AMPParams || c.Save != "") {
		return nil, fmt.Errorf("--quantize: not with data parallelism, --amp-params or --save (quant.Save writes INT8 models)")
	}
	if c.Prune != 0 && (c.Resume != "" || c.Parallel()) {
		return nil, fmt.Errorf("--prune: not with --resume or data parallelism (the pruned shapes differ from the model a snapshot is built for)")
	}
	return c, nil
}
