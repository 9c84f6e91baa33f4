package train

import (
	"fmt"
	"strconv"

	"github.com/headroom-ml/headroom/autograd"
	"github.com/headroom-ml/headroom/checkpoint"
	"github.com/headroom-ml/headroom/device"
	"github.com/headroom-ml/headroom/dtype"
	"github.com/headroom-ml/headroom/nn"
)

// AMPDType returns the --amp dtype: Invalid when off, BF16 for "bf16" (and
// --amp alone), F16 for "fp16"/"f16".
func (c *Common) AMPDType() (dtype.DType, error) {
	switch c.AMP {
	case "":
		if c.AMPParams {
			return 0, fmt.Errorf("--amp-params needs --amp bf16 or --amp fp16")
		}
		return dtype.Invalid, nil
	case "bf16", "bfloat16":
		return dtype.BF16, nil
	case "fp16", "f16", "half":
		return dtype.F16, nil
	}
	return 0, fmt.Errorf("--amp %q: want bf16 or fp16", c.AMP)
}

// AcceptAMP and AcceptCheckpoint tell NormalizeArgs which words after
// --amp and --checkpoint are their values.
var (
	AcceptAMP = func(v string) bool {
		switch v {
		case "bf16", "bfloat16", "fp16", "f16", "half":
			return true
		}
		return false
	}
	AcceptCheckpoint = func(v string) bool { _, err := strconv.Atoi(v); return err == nil }
)

// Accept is the NormalizeArgs table for the common flags.
var Accept = map[string]func(string) bool{"amp": AcceptAMP, "checkpoint": AcceptCheckpoint}

// RunBlocks returns the block runner that --checkpoint or
// --checkpoint-budget ask for (nil: plain), and a description.
func (c *Common) RunBlocks() (func([]nn.Layer, *autograd.Tensor) *autograd.Tensor, string, error) {
	switch {
	case c.Checkpoint != "" && c.CheckpointBudget != "":
		return nil, "", fmt.Errorf("--checkpoint and --checkpoint-budget: choose one")
	case c.CheckpointBudget != "":
		n, err := device.ParseBytes(c.CheckpointBudget)
		if err != nil || n <= 0 {
			return nil, "", fmt.Errorf("--checkpoint-budget %q: want a size such as 256MiB", c.CheckpointBudget)
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
		return nil, "", fmt.Errorf("--checkpoint %q: want a number of segments ≥ 1 (or no value for ⌈√n⌉)", c.Checkpoint)
	}
	return func(ls []nn.Layer, x *autograd.Tensor) *autograd.Tensor { return checkpoint.Sequential(ls, n, x) },
		fmt.Sprintf("checkpoint %d segments", n), nil
}
