package optim

import (
	"fmt"
	"math"

	"github.com/headroom-ml/headroom/device"
	"github.com/headroom-ml/headroom/nn"
)

// AdamConfig configures Adam and AdamW. The zero value is PyTorch's
// defaults. A field left at 0 takes its default; set it to Zero to ask for
// an actual 0 where the default is not 0.
type AdamConfig struct {
	// LR is the learning rate; default 1e-3.
	LR float64
	// Beta1 and Beta2 are the decay rates of the first and second moment
	// estimates, in [0, 1); defaults 0.9 and 0.999.
	Beta1, Beta2 float64
	// Eps is added to the denominator; default 1e-8.
	Eps float64
	// WeightDecay is the L2 penalty (Adam: added to the gradient) or the
	// decoupled decay rate (AdamW: p ← p·(1 − LR·WeightDecay)); default 0
	// for Adam and 0.01 for AdamW.
	WeightDecay float64
	// MasterWeights keeps an F32 copy of each F16/BF16 parameter in the
	// optimizer (state "master", tagged optimizer): Step updates the copy
	// from the 16-bit gradient and rounds it into the parameter (Micikevicius
	// et al. 2018). The parameters must all be F16 or BF16 (and without it
	// F32 or F64): the constructor checks. Memory per
	// element: 4 (master) + 8 (m and v in F32) bytes of optimizer state,
	// besides the 2-byte parameter and 2-byte gradient.
	MasterWeights bool
}

// Adam is the Adam optimizer (Kingma and Ba), or AdamW (Loshchilov and
// Hutter) when made by NewAdamW, with PyTorch's semantics: per parameter p
// with gradient g, after t updates of that parameter (see device.AdamArgs):
//
//	Adam:  g' = g + λ·p              AdamW: p ← p·(1 − lr·λ), g' = g
//	m ← β1·m + (1−β1)·g'             v ← β2·v + (1−β2)·g'²
//	p ← p − lr·(m/(1−β1^t)) / (√(v/(1−β2^t)) + ε)
//
// Memory: two state tensors per parameter, m ("exp_avg") and v
// ("exp_avg_sq"), of the parameter's shape and dtype — 8 bytes per F32
// parameter element, 16 per F64 — tagged device.Optimizer on the
// parameter's device. They are allocated on the first Step that sees the
// parameter's gradient (before any parameter is written) and freed by
// Release. Step itself allocates nothing else.
type Adam struct {
	base
	beta1, beta2, eps, wd float64
	decoupled             bool
}

var _ Optimizer = (*Adam)(nil)

// NewAdam returns torch.optim.Adam over the non-buffer params.
func NewAdam(params []nn.Param, c AdamConfig) (*Adam, error) {
	return newAdam("adam", params, c, 0, false)
}

// NewAdamW returns torch.optim.AdamW over the non-buffer params: Adam with
// decoupled weight decay (default 0.01).
func NewAdamW(params []nn.Param, c AdamConfig) (*Adam, error) {
	return newAdam("adamw", params, c, 0.01, true)
}

func newAdam(kind string, params []nn.Param, c AdamConfig, wd float64, decoupled bool) (*Adam, error) {
	a := &Adam{
		beta1: orDefault(c.Beta1, 0.9), beta2: orDefault(c.Beta2, 0.999),
		eps: orDefault(c.Eps, 1e-8), wd: orDefault(c.WeightDecay, wd), decoupled: decoupled,
	}
	lr := orDefault(c.LR, 1e-3)
	for _, f := range []struct {
		name    string
		v, hi   float64
		openTop bool
	}{
		{"LR", lr, math.Inf(1), false}, {"Beta1", a.beta1, 1, true}, {"Beta2", a.beta2, 1, true},
		{"Eps", a.eps, math.Inf(1), false}, {"WeightDecay", a.wd, math.Inf(1), false},
	} {
		if !(f.v >= 0 && f.v < f.hi) {
			want := "a finite value ≥ 0"
			if f.openTop {
				want = "a value in [0, 1)"
			}
			return nil, fmt.Errorf("%s: %s is %v, want %s (or Zero for 0)", kind, f.name, f.v, want)
		}
	}
	b, err := newBase(kind, params, lr, c.MasterWeights, "exp_avg", "exp_avg_sq")
	if err != nil {
		return nil, err
	}
	a.base = b
	return a, nil
}

// Step applies one update to every parameter that has a gradient, after
// checking all of them and allocating any missing state; on error nothing
// has changed. It bumps the version of every tensor it writes.
func (a *Adam) Step() error {
	work, err := a.pending()
	if err != nil {
		return err
	}
	if err := a.allocate("step", work); err != nil {
		return err
	}
	for _, s := range work {
		a.update(s)
	}
	a.steps++
	return nil
}

// update applies one Adam update to s and bumps the versions of what it
// wrote.
func (a *Adam) update(s *slot) {
	s.step++
	m, v := s.state[len(s.state)-2], s.state[len(s.state)-1]
	p := a.target(s)
	if k := s.t.Device().Kernels(); k != nil {
		k.AdamStep(operand(p), operand(s.t.Grad()), operand(m), operand(v), device.AdamArgs{
			LR: a.lr, Beta1: a.beta1, Beta2: a.beta2, Eps: a.eps, WeightDecay: a.wd,
			Step: s.step, Decoupled: a.decoupled,
		})
	}
	p.Block().Bump()
	m.Block().Bump()
	v.Block().Bump()
	a.publish(s)
}

// hypers are the settings a loaded State must match.
func (a *Adam) hypers() []hyper {
	return []hyper{{"beta1", a.beta1}, {"beta2", a.beta2}, {"eps", a.eps},
		{"weight_decay", a.wd}, {"decoupled_weight_decay", b2f(a.decoupled)}, {"master_weights", b2f(a.master)}}
}

// State returns m and v of each parameter that has them ("exp_avg.<name>",
// "exp_avg_sq.<name>"), the optimizer's own tensors, and the scalars
// "step" (successful Step calls), "step.<name>" (updates of each parameter
// with state: the t of its bias correction), "lr", "beta1", "beta2", "eps",
// "weight_decay" and "decoupled_weight_decay" (1 for AdamW).
func (a *Adam) State() State {
	s := a.state()
	for _, h := range a.hypers() {
		s.Scalars[h.name] = h.v
	}
	for _, sl := range a.slots {
		if sl.state != nil {
			s.Scalars["step."+sl.name] = float64(sl.step)
		}
	}
	return s
}

// Load restores a State saved by an Adam (AdamW) over parameters of the
// same names, shapes and dtypes: m, v, the step counts and the learning
// rate. The other hyperparameters must equal this optimizer's. Everything
// is checked, and missing state allocated, before anything is copied: on
// error the optimizer is unchanged. Parameters the State has no tensors for
// lose theirs, as in a fresh optimizer.
func (a *Adam) Load(s State) error {
	l, err := a.check(s, a.hypers(), "step")
	if err != nil {
		return err
	}
	steps := map[*slot]int{}
	for _, sl := range a.slots {
		v, ok := s.Scalars["step."+sl.name]
		switch {
		case l.src[sl] == nil && ok:
			return fmt.Errorf("%s: load: scalar %q without tensors for %q", a.kind, "step."+sl.name, sl.name)
		case l.src[sl] == nil:
			continue
		case !ok:
			return fmt.Errorf("%s: load: scalar %q is missing", a.kind, "step."+sl.name)
		}
		n, ok := count(v)
		if !ok || n < 1 {
			return fmt.Errorf("%s: load: %s = %v, want a count ≥ 1", a.kind, "step."+sl.name, v)
		}
		steps[sl] = n
	}
	return a.restore(l, func(sl *slot) { sl.step = steps[sl] })
}
