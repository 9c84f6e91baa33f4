package nn

import "github.com/headroom-ml/headroom/autograd"

// Sequential runs layers one after the other, releasing each intermediate
// output as soon as the next layer has consumed it (what the next layer
// saved for backward stays alive through its own reference).
type Sequential struct {
	Layers []Layer
}

// NewSequential returns a Sequential over layers.
func NewSequential(layers ...Layer) *Sequential { return &Sequential{Layers: layers} }

// Forward runs the layers in order. The input is not released.
func (s *Sequential) Forward(x *autograd.Tensor) *autograd.Tensor {
	h := x
	for _, l := range s.Layers {
		n := l.Forward(h)
		if h != x {
			h.Release()
		}
		h = n
	}
	return h
}

// Params returns the layers' parameters in order.
func (s *Sequential) Params() []Param {
	gs := make([][]Param, len(s.Layers))
	for i, l := range s.Layers {
		gs[i] = l.Params()
	}
	return collect(gs...)
}

// Train sets the mode of every layer.
func (s *Sequential) Train(on bool) {
	for _, l := range s.Layers {
		l.Train(on)
	}
}

// Func wraps a parameterless function of one tensor as a Layer (ReLU,
// flatten, …).
type Func struct {
	Name string
	F    func(*autograd.Tensor) *autograd.Tensor
}

// Forward applies F.
func (f Func) Forward(x *autograd.Tensor) *autograd.Tensor {
	defer x.Scope().Within(f.Name)()
	return f.F(x)
}

// Params returns nothing.
func (Func) Params() []Param { return nil }

// Train does nothing.
func (Func) Train(bool) {}

// ReLU is the rectifier as a Layer.
func ReLU(name string) Func { return Func{Name: name, F: (*autograd.Tensor).ReLU} }

// GELU is the exact GELU as a Layer.
func GELU(name string) Func { return Func{Name: name, F: (*autograd.Tensor).GELU} }
