package nn

import "github.com/headroom-ml/headroom/autograd"

// Linear is y = x·Wᵀ + b for x (…, In): PyTorch's nn.Linear.
//
// Memory: parameters (Out·In + Out)·size bytes (Out·In without bias);
// forward allocates y (…, Out) and saves x (…, In), already alive.
type Linear struct {
	Name    string
	In, Out int
	Weight  *autograd.Tensor // (Out, In)
	Bias    *autograd.Tensor // (Out), nil without bias
}

// NewLinear makes a Linear layer named name, initialised like PyTorch's
// (U(±1/√In) for weight and bias). It panics with *autograd.Error for
// sizes ≤ 0 and *device.OOMError when memory runs out, holding nothing
// then.
func NewLinear(b *Builder, name string, in, out int, bias bool) *Linear {
	return newLinear(b, name, in, out, bias, linearInit{})
}

// Forward returns x·Wᵀ + b.
func (l *Linear) Forward(x *autograd.Tensor) *autograd.Tensor {
	defer x.Scope().Within(l.Name)()
	return autograd.Linear(x, l.Weight, l.Bias)
}

// Params returns weight and bias.
func (l *Linear) Params() []Param {
	ps := []Param{{Name: l.Weight.Name(), T: l.Weight}}
	if l.Bias != nil {
		ps = append(ps, Param{Name: l.Bias.Name(), T: l.Bias})
	}
	return ps
}

// Train does nothing: Linear behaves the same in both modes.
func (l *Linear) Train(bool) {}
