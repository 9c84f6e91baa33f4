package parallel

import (
	"github.com/headroom-ml/headroom/autograd"
	"github.com/headroom-ml/headroom/nn"
)

// Replicated returns the parameters every rank of the tensor group holds
// whole, with the same gradient: the position table, the LayerNorms and
// the row-parallel layers' biases (those this rank built). A gradient
// norm over the group counts them once (MeshOptimizer).
func (g *TensorGPT) Replicated() []*autograd.Tensor {
	var out []*autograd.Tensor
	add := func(ms ...nn.Module) {
		for _, m := range ms {
			if !isNil(m) {
				for _, p := range m.Params() {
					out = append(out, p.T)
				}
			}
		}
	}
	add(g.Wpe, g.LNF)
	for _, k := range g.Blocks {
		add(k.LN1, k.LN2)
		for _, b := range []*autograd.Tensor{k.Proj.Bias, k.Out.Bias} {
			if b != nil {
				out = append(out, b)
			}
		}
	}
	return out
}
