package optim_test

import (
	"math/rand/v2"
	"testing"

	"github.com/headroom-ml/headroom/autograd"
	"github.com/headroom-ml/headroom/device"
	"github.com/headroom-ml/headroom/device/cpu"
	"github.com/headroom-ml/headroom/dtype"
	"github.com/headroom-ml/headroom/nn"
	"github.com/headroom-ml/headroom/optim"
)

// stepOneCase is an optimizer over two F64 parameters, made fresh.
type stepOneCase struct {
	name string
	make func(ps []nn.Param) (optim.ParamStepper, error)
}

var stepOneCases = []stepOneCase{
	{"sgd momentum", func(ps []nn.Param) (optim.ParamStepper, error) {
		return optim.NewSGD(ps, optim.SGDConfig{LR: 0.1, Momentum: 0.9, WeightDecay: 0.01, Dampening: 0.1})
	}},
	{"sgd nesterov", func(ps []nn.Param) (optim.ParamStepper, error) {
		return optim.NewSGD(ps, optim.SGDConfig{LR: 0.1, Momentum: 0.9, Nesterov: true})
	}},
	{"adamw", func(ps []nn.Param) (optim.ParamStepper, error) {
		return optim.NewAdamW(ps, optim.AdamConfig{LR: 0.01})
	}},
	{"adam", func(ps []nn.Param) (optim.ParamStepper, error) {
		return optim.NewAdam(ps, optim.AdamConfig{LR: 0.01, WeightDecay: 0.1})
	}},
}

// stepOneRun runs 3 steps over two parameters with seeded gradients:
// through Step, or (perParam) StepParam on each parameter — freeing its
// gradient — and then Step. It returns the parameters' and the state's
// values after each step.
func stepOneRun(t *testing.T, c stepOneCase, perParam bool) [][]float64 {
	dev, host := cpu.New(0, device.Options{}), cpu.New(100, device.Options{})
	a := param(dev, dtype.F64, "a", 1, -2, 3)
	b := param(dev, dtype.F64, "b", 0.5, 0.25)
	o, err := c.make(params(a, b))
	if err != nil {
		t.Fatal(err)
	}
	defer o.Release()
	rng := rand.New(rand.NewPCG(1, 2))
	var out [][]float64
	for range 3 {
		for _, p := range []*autograd.Tensor{a, b} {
			g := make([]float64, p.Len())
			for i := range g {
				g[i] = rng.NormFloat64()
			}
			setGrad(t, p, g)
		}
		if perParam {
			for _, p := range []*autograd.Tensor{b, a} {
				if u, err := o.StepParam(p, host); err != nil {
					t.Fatal(err)
				} else {
					u.Release()
				}
				p.ZeroGrad()
			}
		}
		if err := o.Step(); err != nil {
			t.Fatal(err)
		}
		o.ZeroGrad()
		out = append(out, snapshotOf(o))
	}
	if got := o.State().Scalars["step"]; got != 3 {
		t.Errorf("%s: step = %v, want 3", c.name, got)
	}
	return out
}

// snapshotOf returns every parameter's and state tensor's values, in a
// fixed order.
func snapshotOf(o optim.Optimizer) []float64 {
	var v []float64
	for _, p := range o.Params() {
		v = append(v, p.T.Float64s()...)
	}
	st := o.State()
	for _, p := range o.Params() {
		for _, n := range []string{"momentum_buffer.", "exp_avg.", "exp_avg_sq."} {
			if x := st.Tensors[n+p.Name]; x != nil {
				v = append(v, x.Float64s()...)
			}
		}
		v = append(v, st.Scalars["step."+p.Name])
	}
	return v
}

func TestStepParamEqualsStep(t *testing.T) {
	for _, c := range stepOneCases {
		want := stepOneRun(t, c, false)
		got := stepOneRun(t, c, true)
		for i := range want {
			same(t, c.name, got[i], want[i])
		}
	}
}

// TestStepParamUndo checks that undo puts a parameter and its state back
// bit for bit, both when the state existed and when StepParam made it.
func TestStepParamUndo(t *testing.T) {
	for _, c := range stepOneCases {
		dev, host := cpu.New(0, device.Options{}), cpu.New(100, device.Options{})
		a := param(dev, dtype.F64, "a", 1, -2, 3)
		o, err := c.make(params(a))
		if err != nil {
			t.Fatal(err)
		}
		setGrad(t, a, []float64{0.1, 0.2, 0.3})
		fresh := dev.Stats().ByTag[device.Optimizer].Current
		undo, err := o.StepParam(a, host)
		if err != nil {
			t.Fatal(err)
		}
		undo.Restore()
		if got := dev.Stats().ByTag[device.Optimizer].Current; got != fresh {
			t.Errorf("%s: optimizer bytes after undoing the first update = %d, want %d", c.name, got, fresh)
		}
		if err := o.Step(); err != nil { // a real first step
			t.Fatal(err)
		}
		setGrad(t, a, []float64{-1, 2, 0.5})
		before := snapshotOf(o)
		if undo, err = o.StepParam(a, host); err != nil {
			t.Fatal(err)
		}
		if after := snapshotOf(o); after[0] == before[0] {
			t.Fatalf("%s: StepParam did not change the parameter", c.name)
		}
		undo.Restore()
		same(t, c.name+" after undo", snapshotOf(o), before)
		o.Release()
	}
}

func TestStepParamErrors(t *testing.T) {
	dev := cpu.New(0, device.Options{})
	a := param(dev, dtype.F64, "a", 1, 2)
	other := param(dev, dtype.F64, "other", 1)
	o, err := optim.NewAdamW(params(a), optim.AdamConfig{})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		what string
		t    *autograd.Tensor
		want string
	}{
		{"no gradient", a, `adamw: step_param: parameter "a" has no gradient`},
		{"not a parameter", other, "adamw: step_param: tensor"},
	} {
		if _, err := o.StepParam(tc.t, dev); err == nil || len(err.Error()) < len(tc.want) || err.Error()[:len(tc.want)] != tc.want {
			t.Errorf("%s: StepParam error %v, want one starting %q", tc.what, err, tc.want)
		}
	}
	if got := a.Float64s(); got[0] != 1 || got[1] != 2 {
		t.Errorf("a failed StepParam changed the parameter: %v", got)
	}
}
