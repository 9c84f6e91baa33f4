package train

import (
	"strconv"
	"strings"
	"sync"

	"github.com/headroom-ml/headroom/autograd"
	"github.com/headroom-ml/headroom/checkpoint"
	"github.com/headroom-ml/headroom/device"
	"github.com/headroom-ml/headroom/device/cpu"
	"github.com/headroom-ml/headroom/nn"
)

// offloadBlocks is RunBlocks for --offload-activations.
func (c *Common) offloadBlocks() (func([]nn.Layer, *autograd.Tensor) *autograd.Tensor, string, error) {
	if c.Checkpoint != "" || c.CheckpointBudget != "" {
		return nil, "", Usagef("--offload-activations with --checkpoint or --checkpoint-budget: choose one")
	}
	a := &actOffload{by: map[*device.Device]*checkpoint.Offload{}}
	return a.forward, "activations offloaded to cpu:100+r, 2 blocks prefetched", nil
}

// actOffload runs a block list with one checkpoint.Offload per compute
// device (the ranks of one process share the runner), each to its own
// host: cpu:100+i for the device kind:i.
type actOffload struct {
	mu sync.Mutex
	by map[*device.Device]*checkpoint.Offload
}

// forward runs ls on x, offloading to x's device's host.
func (a *actOffload) forward(ls []nn.Layer, x *autograd.Tensor) *autograd.Tensor {
	return a.of(x.Device()).Forward(ls, x)
}

// of returns dev's Offload, opening its host at first use.
func (a *actOffload) of(dev *device.Device) *checkpoint.Offload {
	a.mu.Lock()
	defer a.mu.Unlock()
	o := a.by[dev]
	if o == nil {
		o = &checkpoint.Offload{Host: cpu.New(100+deviceIndex(dev), device.Options{})}
		a.by[dev] = o
	}
	return o
}

// deviceIndex is i of a device named kind:i (0 when the name has none).
func deviceIndex(dev *device.Device) int {
	_, n, _ := strings.Cut(dev.Name(), ":")
	i, _ := strconv.Atoi(n)
	return i
}
