package optim

import (
	"github.com/headroom-ml/headroom/autograd"
	"github.com/headroom-ml/headroom/nn"
)

// Optimizer updates parameters from the gradients backward left in them.
// SGD and Adam (Adam and AdamW) implement it.
type Optimizer interface {
	// Step applies one update to every parameter that has a gradient
	// (parameters without one are skipped, as in PyTorch). It checks every
	// parameter, gradient and state tensor, and allocates any state it
	// lacks, before it writes anything: when it returns an error, no
	// parameter and no state has changed.
	Step() error
	// ZeroGrad frees the parameters' gradients.
	ZeroGrad()
	// LR returns the learning rate of the next Step; SetLR changes it
	// (schedules call it before each Step).
	LR() float64
	SetLR(lr float64)
	// State returns the optimizer's state for saving: its tensors by name
	// ("exp_avg.fc1.weight") — the optimizer's own, not to be released —
	// and its scalars ("step", "lr" and the hyperparameters).
	State() State
	// Load restores a State saved from an optimizer of the same kind and
	// hyperparameters over the same parameters. It checks every name,
	// shape and dtype, and allocates any missing state, before it copies
	// anything: on error the optimizer is unchanged.
	Load(s State) error
	// Release frees the optimizer's state tensors.
	Release()
	// Params returns the parameters the optimizer trains, in order.
	Params() []nn.Param
}

// State is an optimizer's state: named tensors and scalars.
type State struct {
	Tensors map[string]*autograd.Tensor
	Scalars map[string]float64
}

// Sharded is implemented by optimizers whose Params carry only this rank's
// part of the gradients of a data-parallel group (ZeRO: package parallel).
// A quantity summed over all gradients — the norm that clipping uses, the
// overflow check of loss scaling — is then this rank's share, and AllSum
// adds up the shares of every rank; every rank calls it at the same point
// of the step. ClipGradNormOf and amp.Scaler do.
type Sharded interface {
	Optimizer
	// AllSum returns the sum of v over the ranks that share the gradients
	// (v itself when Params hold all of them).
	AllSum(v float64) (float64, error)
}
