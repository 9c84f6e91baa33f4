package optim

import (
	"fmt"

	"github.com/headroom-ml/headroom/autograd"
	"github.com/headroom-ml/headroom/dtype"
	"github.com/headroom-ml/headroom/nn"
)

// Quant8Config sets which parameters an 8-bit Adam quantises and how.
type Quant8Config struct {
	// MinElems is the smallest parameter (in elements) whose state is
	// quantised; smaller ones keep F32 state. Default 4096.
	MinElems int
	// Block is the number of elements that share one F32 absmax. Default
	// 2048.
	Block int
}

// Adam8bit is Adam or AdamW (NewAdam8bit, NewAdamW8bit) whose moments are
// stored in 8 bits (Dettmers et al. 2022): for every F32 parameter of at
// least MinElems elements, m as signed dynamic-map codes and v as unsigned
// ones, n bytes each, plus one F32 absmax per Block elements of each — 2n +
// 8·ceil(n/Block) bytes of state against 8n in F32, tagged device.Optimizer
// on the parameter's device. The other parameters are updated by a plain F32
// Adam. Each update dequantises one block of m and v into host scratch, runs
// Adam's arithmetic (as device.AdamArgs describes it) on it, and quantises it
// back; the scratch is 4·Block float32 and 2·Block bytes per Step call.
//
// With AdamConfig.MasterWeights the quantised parameters are F16 or BF16
// and each keeps an F32 master copy ("master", 4n bytes more: 6n +
// 8·ceil(n/Block) in all): a block's update reads the master and the
// 16-bit gradient (widened to F32 through 2·Block more bytes of host
// scratch), writes the master, and the master is
// then rounded into the parameter. The trajectory of the masters is bit
// for bit the one of the F32 8-bit Adam over F32 parameters equal to them
// fed the widened gradients. Small parameters get a plain Adam with master
// weights.
type Adam8bit struct {
	kind                  string
	master                bool
	lr                    float64
	beta1, beta2, eps, wd float64
	decoupled             bool
	block                 int
	quant                 []*qslot
	small                 *Adam // nil when every parameter is quantised
	params                []nn.Param
	steps                 int
}

var _ Optimizer = (*Adam8bit)(nil)

// qslot is one quantised parameter and its state.
type qslot struct {
	name       string
	t          *autograd.Tensor
	m, v       *autograd.Tensor // codes, n bytes each (dtype I8 holding the raw code)
	mMax, vMax *autograd.Tensor // F32 absmax per block
	master     *autograd.Tensor // F32 copy of a 16-bit parameter (MasterWeights), else nil
	step       int
}

// NewAdam8bit returns Adam with 8-bit moments over the non-buffer params.
func NewAdam8bit(params []nn.Param, c AdamConfig, q Quant8Config) (*Adam8bit, error) {
	return newAdam8bit("adam8bit", params, c, q, 0, false)
}

// NewAdamW8bit returns AdamW with 8-bit moments over the non-buffer params.
func NewAdamW8bit(params []nn.Param, c AdamConfig, q Quant8Config) (*Adam8bit, error) {
	return newAdam8bit("adamw8bit", params, c, q, 0.01, true)
}

var (
	signedMap   = newQuantMap(true)
	unsignedMap = newQuantMap(false)
)

func newAdam8bit(kind string, params []nn.Param, c AdamConfig, q Quant8Config, wd float64, decoupled bool) (*Adam8bit, error) {
	minElems, block := q.MinElems, q.Block
	if minElems == 0 {
		minElems = 4096
	}
	if block == 0 {
		block = 2048
	}
	if minElems < 1 || block < 1 {
		return nil, fmt.Errorf("%s: MinElems %d and Block %d, want ≥ 1 (or 0 for the defaults)", kind, q.MinElems, q.Block)
	}
	// The F32 Adam validates the hyperparameters and the parameter list.
	all, err := newAdam(kind, params, c, wd, decoupled)
	if err != nil {
		return nil, err
	}
	a := &Adam8bit{kind: kind, master: c.MasterWeights, lr: all.lr, beta1: all.beta1, beta2: all.beta2, eps: all.eps,
		wd: all.wd, decoupled: decoupled, block: block, params: all.Params()}
	var rest []nn.Param
	for _, p := range a.params {
		if (p.T.DType() == dtype.F32 || c.MasterWeights) && p.T.Len() >= minElems {
			a.quant = append(a.quant, &qslot{name: p.Name, t: p.T})
		} else {
			rest = append(rest, p)
		}
	}
	if len(rest) > 0 {
		if a.small, err = newAdam(kind, rest, c, wd, decoupled); err != nil {
			return nil, err
		}
	}
	return a, nil
}

// LR returns the learning rate of the next Step.
func (a *Adam8bit) LR() float64 { return a.lr }

// SetLR sets the learning rate of the next Steps.
func (a *Adam8bit) SetLR(lr float64) {
	a.lr = lr
	if a.small != nil {
		a.small.SetLR(lr)
	}
}

// Params returns the trained parameters, in order.
func (a *Adam8bit) Params() []nn.Param { return a.params }

// ZeroGrad frees the parameters' gradients.
func (a *Adam8bit) ZeroGrad() {
	for _, p := range a.params {
		p.T.ZeroGrad()
	}
}

// Release frees every state tensor; the next Step starts from fresh state.
func (a *Adam8bit) Release() {
	for _, s := range a.quant {
		for _, t := range s.tensors() {
			t.Release()
		}
		s.clear()
	}
	if a.small != nil {
		a.small.Release()
	}
	a.steps = 0
}

// StateBytes returns the bytes of the optimizer's state tensors.
func (a *Adam8bit) StateBytes() int64 {
	var n int64
	for _, s := range a.quant {
		for _, t := range s.tensors() {
			n += t.Bytes()
		}
	}
	if a.small != nil {
		n += a.small.StateBytes()
	}
	return n
}

// tensors returns the slot's state tensors (none before the first update),
// in the order of qnames: the master copy last, when there is one.
func (s *qslot) tensors() []*autograd.Tensor {
	if s.m == nil {
		return nil
	}
	ts := []*autograd.Tensor{s.m, s.v, s.mMax, s.vMax}
	if s.master != nil {
		ts = append(ts, s.master)
	}
	return ts
}

// clear forgets the slot's state (released by the caller).
func (s *qslot) clear() {
	s.m, s.v, s.mMax, s.vMax, s.master, s.step = nil, nil, nil, nil, nil, 0
}

// target is the F32 tensor a block update reads and writes: the master
// copy, or the parameter.
func (s *qslot) target() *autograd.Tensor {
	if s.master != nil {
		return s.master
	}
	return s.t
}
