package train

import (
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/headroom-ml/headroom/autograd"
	"github.com/headroom-ml/headroom/checkpoint"
	"github.com/headroom-ml/headroom/device"
	"github.com/headroom-ml/headroom/device/cpu"
	"github.com/headroom-ml/headroom/device/meta"
	"github.com/headroom-ml/headroom/nn"
)

// offloadBlocks is RunBlocks for --offload-activations.
func (c *Common) offloadBlocks() (func([]nn.Layer, *autograd.Tensor) *autograd.Tensor, string, error) {
	if c.Checkpoint != "" || c.CheckpointBudget != "" {
		return nil, "", Usagef("--offload-activations with --checkpoint or --checkpoint-budget: choose one")
	}
	a := c.acts
	if a == nil { // a Common that Register did not set up
		a = newActOffload()
	}
	return a.forward, "activations offloaded to cpu:100+r, 2 blocks prefetched", nil
}

// actOffload runs a block list with one checkpoint.Offload per compute
// device (the ranks of one process share the runner), each to its own
// host: cpu:100+i for the device kind:i.
type actOffload struct {
	mu    sync.Mutex
	by    map[*device.Device]*checkpoint.Offload
	modes []checkpoint.Mode // --activation-budget's (nil: all but the last offloaded)
}

// drop forgets dev's Offload and closes its host (the planner's meta
// devices, once planned).
func (a *actOffload) drop(dev *device.Device) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if o := a.by[dev]; o != nil {
		o.Host.Close()
		delete(a.by, dev)
	}
}

// setModes sets the modes of every Offload, opened or to come.
func (a *actOffload) setModes(ms []checkpoint.Mode) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.modes = ms
	for _, o := range a.by {
		o.Modes = ms
	}
}

func newActOffload() *actOffload { return &actOffload{by: map[*device.Device]*checkpoint.Offload{}} }

// hosts returns the hosts opened so far, by name.
func (a *actOffload) hosts() []*device.Device {
	a.mu.Lock()
	defer a.mu.Unlock()
	var hs []*device.Device
	for _, o := range a.by {
		hs = append(hs, o.Host)
	}
	sort.Slice(hs, func(i, j int) bool { return hs[i].Name() < hs[j].Name() })
	return hs
}

// ActivationHosts returns the host devices --offload-activations has
// opened so far (one per compute device that ran blocks), by name.
func (c *Common) ActivationHosts() []*device.Device {
	if c.acts == nil {
		return nil
	}
	return c.acts.hosts()
}

// reportActivationHosts prints each activation host's peak and records
// the peaks in rep.Extra["activation_hosts"] (nothing without hosts).
func (c *Common) reportActivationHosts(out io.Writer, rep *Report) {
	hs := c.ActivationHosts()
	if len(hs) == 0 {
		return
	}
	peaks := map[string]PeakBytes{}
	for _, h := range hs {
		p := Peaks(h.Stats())
		peaks[h.Name()] = p
		fmt.Fprintf(out, "activation offload host %s: activation peak %s\n", h.Name(), device.FormatBytes(p.Activation))
	}
	if rep.Extra == nil {
		rep.Extra = map[string]any{}
	}
	rep.Extra["activation_hosts"] = peaks
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
		o = &checkpoint.Offload{Host: hostOf(dev), Modes: a.modes}
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

// hostOf opens the activation host of dev: cpu:100+i for kind:i, a meta
// device for a meta one (planning).
func hostOf(dev *device.Device) *device.Device {
	if dev.Kind() == "meta" {
		return meta.New(100+deviceIndex(dev), device.Options{})
	}
	return cpu.New(100+deviceIndex(dev), device.Options{})
}
