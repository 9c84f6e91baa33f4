package conformance

import (
	"math/rand/v2"
	"reflect"
	"testing"

	"github.com/headroom-ml/headroom/autograd"
	"github.com/headroom-ml/headroom/device"
	"github.com/headroom-ml/headroom/device/cpu"
	"github.com/headroom-ml/headroom/dtype"
	"github.com/headroom-ml/headroom/nn"
	"github.com/headroom-ml/headroom/optim"
)

// optimCase is an optimizer of the suite; master asks for F32 master
// weights (set for F16 and BF16 parameters).
type optimCase struct {
	name string
	make func(ps []nn.Param, master bool) (optim.Optimizer, error)
}

func optimCases() []optimCase {
	return []optimCase{
		{"sgd", func(ps []nn.Param, m bool) (optim.Optimizer, error) {
			return optim.NewSGD(ps, optim.SGDConfig{LR: 0.1, MasterWeights: m})
		}},
		{"sgd_nesterov", func(ps []nn.Param, m bool) (optim.Optimizer, error) {
			return optim.NewSGD(ps, optim.SGDConfig{LR: 0.1, Momentum: 0.9, WeightDecay: 0.01, Nesterov: true, MasterWeights: m})
		}},
		{"adam", func(ps []nn.Param, m bool) (optim.Optimizer, error) {
			return optim.NewAdam(ps, optim.AdamConfig{LR: 0.01, WeightDecay: 0.1, MasterWeights: m})
		}},
		{"adamw", func(ps []nn.Param, m bool) (optim.Optimizer, error) {
			return optim.NewAdamW(ps, optim.AdamConfig{LR: 0.01, WeightDecay: 0.1, MasterWeights: m})
		}},
	}
}

const optimSteps = 3

var optimShapes = [][]int{{3, 4}, {5}}

// optimRun is what a few optimizer steps on one device observed.
type optimRun struct {
	params [][]float64                  // after the last step
	before []device.LiveGroup           // Live before the steps
	marks  [optimSteps + 2]device.Stats // after each step, after Release of the state, after Release of the parameters
}

// optimData draws the parameters and each step's gradients, rounded to dt.
func optimData(name string, dt dtype.DType) (ps [][]float64, gs [][][]float64) {
	rng := rand.New(rand.NewPCG(seedOf(name), 2))
	draw := func(n int) []float64 {
		v := make([]float64, n)
		for i := range v {
			v[i] = 2*rng.Float64() - 1
		}
		return round(v, dt)
	}
	for _, sh := range optimShapes {
		ps = append(ps, draw(numel(sh)))
	}
	for range optimSteps {
		var g [][]float64
		for _, sh := range optimShapes {
			g = append(g, draw(numel(sh)))
		}
		gs = append(gs, g)
	}
	return ps, gs
}

// runOptim runs the steps with parameters in dt on values rounded to vt.
func runOptim(t *testing.T, dev *device.Device, c optimCase, dt, vt dtype.DType, read bool) (r optimRun) {
	t.Helper()
	base, before := start(dev)
	r.before = before
	defer func() {
		for m := range r.marks {
			r.marks[m] = since(r.marks[m], base)
		}
	}()
	pv, gv := optimData(c.name, vt)
	var ps []nn.Param
	for i, sh := range optimShapes {
		p := autograd.New(dev, dt, device.Parameter, sh...)
		p.SetFloat64s(pv[i])
		ps = append(ps, nn.Param{Name: string(rune('a' + i)), T: p.SetRequiresGrad(true)})
	}
	o, err := c.make(ps, dt.IsLowPrecision())
	if err != nil {
		t.Fatalf("%s %s: %v", c.name, dt, err)
	}
	for s := range optimSteps {
		for i, p := range ps {
			g := autograd.New(dev, dt, device.Gradient, optimShapes[i]...)
			g.SetFloat64s(gv[s][i])
			p.T.SetGrad(g)
		}
		if err := o.Step(); err != nil {
			t.Fatalf("%s %s step %d on %s: %v", c.name, dt, s, dev, err)
		}
		o.ZeroGrad()
		r.marks[s] = dev.Stats()
	}
	for _, p := range ps {
		if read {
			r.params = append(r.params, p.T.Float64s())
		}
	}
	o.Release()
	r.marks[optimSteps] = dev.Stats()
	for _, p := range ps {
		p.T.Release()
	}
	r.marks[optimSteps+1] = dev.Stats()
	return r
}

// checkOptim runs a few steps of an optimizer on dev and checks the
// parameters against cpu F64, the accounting against the reference
// device's and that nothing is left.
func checkOptim(t *testing.T, dev *device.Device, c optimCase, dt dtype.DType, o Options) {
	got := runOptim(t, dev, c, dt, dt, !o.NoData)
	if l := dev.Live(); !reflect.DeepEqual(l, got.before) {
		t.Errorf("%s holds %+v after the optimizer and its parameters were released, %+v before", dev, l, got.before)
	}
	ref := accountingRef(dev)
	defer ref.Close()
	want := runOptim(t, ref, c, dt, dt, false)
	for m := range got.marks {
		if d := diffStats(got.marks[m], want.marks[m]); d != "" {
			t.Errorf("%s %s accounting at mark %d: %s has %s; %s has the other", c.name, dt, m, dev, d, ref)
			break
		}
	}
	if o.NoData {
		return
	}
	f64 := runOptim(t, cpu.New(0, device.Options{}), c, dtype.F64, dt, true)
	for i := range got.params {
		if m := mismatch(got.params[i], f64.params[i], Tolerances[dt]); m != "" {
			t.Errorf("%s %s: parameter %d %v after %d steps: %s", c.name, dt, i, optimShapes[i], optimSteps, m)
		}
	}
}
