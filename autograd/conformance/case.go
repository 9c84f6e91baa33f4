package conformance

import (
	"github.com/headroom-ml/headroom/autograd"
	"github.com/headroom-ml/headroom/device"
)

// kind says how an input of a case is made.
type kind int

const (
	grad     kind = iota // float in [-1, 1], requires grad
	positive             // float in [0.5, 2], requires grad (log, sqrt, a divisor)
	distinct             // float, distinct multiples of 1/8 (exact in BF16: max, argmax), requires grad
	constant             // float in [-1, 1], no grad
	index                // I64 in [0, n)
	target               // I64 in [0, n), every third one the ignore index -100
)

// input is one input of a case.
type input struct {
	kind  kind
	shape []int
	n     int // index and target: the number of classes
}

func in(k kind, shape ...int) input { return input{kind: k, shape: shape} }
func idx(n int, shape ...int) input { return input{kind: index, shape: shape, n: n} }
func tgt(n int, shape ...int) input { return input{kind: target, shape: shape, n: n} }

// Env is what a case's function gets besides its inputs.
type Env struct {
	// S is the step's scope; the inputs are attached to it.
	S *autograd.Scope
	// Host is a second, computing cpu device, for transfers (To).
	Host *device.Device
}

// opCase is one op (or a short chain of ops) of the suite: its inputs and
// the function that computes its output from them.
type opCase struct {
	name string
	ins  []input
	f    func(e Env, x []*autograd.Tensor) *autograd.Tensor
	// autocast: for F16 and BF16 the inputs stay F32 and f runs under
	// Scope.Autocast of that dtype (the way a model runs in low
	// precision); otherwise the inputs are stored in the dtype itself.
	autocast bool
}
