package checkpoint

import (
	"fmt"

	"github.com/headroom-ml/headroom/autograd"
	"github.com/headroom-ml/headroom/device"
	"github.com/headroom-ml/headroom/nn"
)

// DefaultWindow is how many layers ahead Offload prefetches in backward
// when its Window is 0.
const DefaultWindow = 2

// Offload runs a stack of layers moving what each layer but the last saves
// for backward to the host device Host (activation offload): the device
// keeps, between a layer's forward and its backward, only the layer's
// output that the next layer reads. Backward brings each layer's tensors
// back ahead of use, Window layers ahead (0: DefaultWindow; < 0: none, on
// demand), the copies running while the current layer's backward
// computes. The last layer is not offloaded: its backward comes first.
// Gradients are bit-identical to plain autograd: only bytes move.
//
// An Offload without Host runs the layers plainly. One Offload serves one
// goroutine's steps.
type Offload struct {
	Host   *device.Device
	Window int
	// Modes, when not nil, says per layer what to do with its saved
	// tensors (one Mode per layer); nil offloads every layer but the last.
	Modes []Mode

	last *autograd.LayerOffload
}

// Stats returns what the last Forward moved, and what its backward has
// fetched back so far.
func (o *Offload) Stats() autograd.OffloadStats {
	if o.last == nil {
		return autograd.OffloadStats{}
	}
	return o.last.Stats()
}

// window returns the prefetch depth o asks for.
func (o *Offload) window() int {
	switch {
	case o.Window == 0:
		return DefaultWindow
	case o.Window < 0:
		return 0
	}
	return o.Window
}

// Forward runs layers on x as nn.Sequential does, offloading as o says; it
// fits nn.GPT's and nn.ResNet's RunBlocks.
func (o *Offload) Forward(layers []nn.Layer, x *autograd.Tensor) *autograd.Tensor {
	s := x.Scope()
	if o.Modes != nil && len(o.Modes) != len(layers) {
		panic(&autograd.Error{Op: "checkpoint.Offload", Msg: fmt.Sprintf("%d modes for %d layers: want one per layer", len(o.Modes), len(layers))})
	}
	if o.Host == nil || s == nil || !s.GradEnabled() || len(layers) < 2 && o.Modes == nil {
		return forward(layers, x)
	}
	lo := autograd.NewLayerOffload(o.Host, o.window())
	o.last = lo
	modes := o.modes(len(layers))
	h := x
	for i, l := range layers {
		if modes[i] == Offloaded {
			s.PushSavedHooks(lo.Group(x))
		} else {
			s.PushSavedHooks(lo.Resident())
		}
		var out *autograd.Tensor
		func() {
			defer s.PopSavedHooks() // also when the layer runs out of memory
			out = runMode(modes[i], l, h)
		}()
		if h != x {
			h.Release()
		}
		h = out
	}
	return h
}
