package train

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/headroom-ml/headroom/autograd"
	"github.com/headroom-ml/headroom/checkpoint"
	"github.com/headroom-ml/headroom/device"
	"github.com/headroom-ml/headroom/dtype"
	"github.com/headroom-ml/headroom/nn"
)

// ampNames maps the --amp spellings to their canonical names.
var ampNames = map[string]string{"bf16": "bf16", "bfloat16": "bf16", "fp16": "fp16", "f16": "fp16", "half": "fp16"}

// AMPDType returns the --amp dtype: Invalid when off, BF16 for "bf16" (and
// --amp alone, and "bfloat16"), F16 for "fp16" ("f16", "half").
func (c *Common) AMPDType() (dtype.DType, error) {
	switch ampNames[c.AMP] {
	case "":
		if c.AMP != "" {
			return 0, Usagef("--amp %s: want bf16 or fp16", c.AMP)
		}
		if c.AMPParams {
			return 0, Usagef("--amp-params needs --amp bf16 or --amp fp16")
		}
		return dtype.Invalid, nil
	case "bf16":
		return dtype.BF16, nil
	}
	return dtype.F16, nil
}

// AcceptAMP and AcceptCheckpoint tell NormalizeArgs which words after
// --amp and --checkpoint are their values: the known ones, for programs
// that also take positional arguments (cmd/headroom).
var (
	AcceptAMP        = func(v string) bool { return ampNames[v] != "" }
	AcceptCheckpoint = func(v string) bool { _, err := strconv.Atoi(v); return err == nil }
)

// Accept is the NormalizeArgs table for the common flags.
var Accept = map[string]func(string) bool{"amp": AcceptAMP, "checkpoint": AcceptCheckpoint}

// acceptWord takes any word that is not a flag (a number is not a flag) as
// the value: a program without positional arguments, such as the
// examples, then says "--amp fp8: want bf16 or fp16" instead of
// "unexpected arguments".
func acceptWord(v string) bool {
	_, err := strconv.ParseFloat(v, 64)
	return !strings.HasPrefix(v, "-") || err == nil
}

// acceptWords is the NormalizeArgs table of Common.Parse.
var acceptWords = map[string]func(string) bool{"amp": acceptWord, "checkpoint": acceptWord}

// RunBlocks returns the block runner that --checkpoint or
// --checkpoint-budget ask for (nil: plain), and a description.
func (c *Common) RunBlocks() (func([]nn.Layer, *autograd.Tensor) *autograd.Tensor, string, error) {
	switch {
	case c.ActivationBudget != "":
		return c.budgetBlocks()
	case c.SelectiveLean && !c.Selective:
		return nil, "", Usagef("--selective-lean without --selective: give both")
	case c.Selective && c.OffloadActivations:
		return nil, "", Usagef("--selective with --offload-activations: choose one")
	case c.Selective:
		return c.selectiveBlocks()
	case c.OffloadActivations:
		return c.offloadBlocks()
	case c.Checkpoint != "" && c.CheckpointBudget != "":
		return nil, "", Usagef("--checkpoint and --checkpoint-budget: choose one")
	case c.CheckpointBudget != "":
		n, err := device.ParseBytes(c.CheckpointBudget)
		if err != nil || n <= 0 {
			return nil, "", Usagef("--checkpoint-budget %s: want a positive size such as 256MiB", c.CheckpointBudget)
		}
		b := checkpoint.NewBudget(n)
		return b.Forward, "checkpoint budget " + device.FormatBytes(n), nil
	case c.Checkpoint == "":
		return nil, "", nil
	case c.Checkpoint == "sqrt":
		return func(ls []nn.Layer, x *autograd.Tensor) *autograd.Tensor { return checkpoint.Sequential(ls, 0, x) },
			"checkpoint ⌈√n⌉ segments", nil
	}
	n, err := strconv.Atoi(c.Checkpoint)
	if err != nil || n < 1 {
		return nil, "", Usagef("--checkpoint %s: want a number of segments ≥ 1 (or no value for ⌈√n⌉)", c.Checkpoint)
	}
	return func(ls []nn.Layer, x *autograd.Tensor) *autograd.Tensor { return checkpoint.Sequential(ls, n, x) },
		fmt.Sprintf("checkpoint %d segments", n), nil
}

// Precision returns the dtypes the flags ask for: the parameters' (f32,
// or the --amp dtype with --amp-params), the forward's autocast (the --amp
// dtype; none with --amp-params, whose parameters are in it already) and
// the gradients' that the loss scaler unscales.
func (c *Common) Precision() (param, forward, grad dtype.DType, err error) {
	ac, err := c.AMPDType()
	if err != nil {
		return 0, 0, 0, err
	}
	if c.AMPParams {
		return ac, dtype.Invalid, ac, nil
	}
	return dtype.F32, ac, dtype.F32, nil
}
