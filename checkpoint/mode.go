package checkpoint

import (
	"github.com/headroom-ml/headroom/autograd"
	"github.com/headroom-ml/headroom/nn"
)

// Mode is what a stack run by Offload does with one layer's saved tensors
// until backward needs them.
type Mode int

const (
	// Keep leaves them on the device, as plain autograd does.
	Keep Mode = iota
	// SelectiveRecompute keeps DefaultPolicy's (matmul and attention
	// outputs) and recomputes the rest in backward (Selective).
	SelectiveRecompute
	// Recompute keeps only the layer's input and recomputes the layer in
	// backward (Run).
	Recompute
	// Offloaded moves them to the host and fetches them back ahead of use.
	Offloaded
)

// String names the mode.
func (m Mode) String() string {
	switch m {
	case Keep:
		return "keep"
	case SelectiveRecompute:
		return "selective"
	case Recompute:
		return "recompute"
	case Offloaded:
		return "offload"
	}
	return "mode?"
}

// modes returns o.Modes, or for n layers every one offloaded but the last.
func (o *Offload) modes(n int) []Mode {
	if o.Modes != nil {
		return o.Modes
	}
	ms := make([]Mode, n)
	for i := range n - 1 {
		ms[i] = Offloaded
	}
	return ms
}

// runMode runs layer l on h under mode m (Offloaded and Keep run it
// plainly: the scope's hooks do the moving).
func runMode(m Mode, l nn.Layer, h *autograd.Tensor) *autograd.Tensor {
	fn := func(in []*autograd.Tensor) []*autograd.Tensor { return []*autograd.Tensor{l.Forward(in[0])} }
	switch m {
	case SelectiveRecompute:
		return Selective(nil, fn, h)[0]
	case Recompute:
		return Run(fn, h)[0]
	}
	return l.Forward(h)
}
