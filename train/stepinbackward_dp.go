package train

import (
	"github.com/headroom-ml/headroom/optim"
	"github.com/headroom-ml/headroom/parallel"
)

// newInBackwardDP is the step inside backward of a data-parallel run: the
// DDP steps each bucket's share as its reduction completes
// (parallel.InBackward), and the scaler's decision at the end of backward
// is taken over every rank.
func (st *Stepper) newInBackwardDP(o *parallel.Optimizer) (*inBackward, error) {
	scale := 1.0
	if sc := st.Scaler; sc != nil && sc.Enabled() {
		scale = sc.Scale()
	}
	dp, err := o.InBackward(st.Host, scale)
	if err != nil {
		return nil, err
	}
	return &inBackward{st: st, dp: dp}, nil
}

// target returns the optimizer that finishes the step after backward: o,
// or what is left of it after a data-parallel step inside backward.
func (ib *inBackward) target(o optim.Optimizer) optim.Optimizer {
	if ib == nil || ib.dp == nil {
		return o
	}
	return ib.dp.Rest()
}
