package plan

import (
	"github.com/headroom-ml/headroom/autograd"
	"github.com/headroom-ml/headroom/checkpoint"
	"github.com/headroom-ml/headroom/device"
	"github.com/headroom-ml/headroom/nn"
)

// blockRunner returns c's runner of a block list (nil: plain): with
// OffloadActivations a checkpoint.Offload to host (the rank's cpu:100+r,
// meta on the planner), prefetching checkpoint.DefaultWindow blocks ahead;
// else runBlocks's checkpointing.
func blockRunner(c Config, host *device.Device) func([]nn.Layer, *autograd.Tensor) *autograd.Tensor {
	if c.activationModes != nil {
		return (&checkpoint.Offload{Host: host, Modes: c.activationModes}).Forward
	}
	if c.OffloadActivations {
		return (&checkpoint.Offload{Host: host}).Forward
	}
	return runBlocks(c)
}
