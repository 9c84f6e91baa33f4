package optim_test

import (
	"strings"
	"testing"

	"github.com/headroom-ml/headroom/device"
	"github.com/headroom-ml/headroom/device/cpu"
	"github.com/headroom-ml/headroom/dtype"
	"github.com/headroom-ml/headroom/nn"
	"github.com/headroom-ml/headroom/optim"
)

// sgdRef is torch.optim.SGD's documented algorithm in float64: it returns
// p and the momentum buffer after the steps.
func sgdRef(p0 []float64, grads [][]float64, lr, mu, damp, wd float64, nesterov bool) (p, buf []float64) {
	p = append([]float64(nil), p0...)
	buf = make([]float64, len(p))
	for t, g := range grads {
		for i := range p {
			gi := g[i] + wd*p[i]
			if mu != 0 {
				if t == 0 {
					buf[i] = gi
				} else {
					buf[i] = mu*buf[i] + (1-damp)*gi
				}
				if nesterov {
					gi += mu * buf[i]
				} else {
					gi = buf[i]
				}
			}
			p[i] -= lr * gi
		}
	}
	return p, buf
}

func TestSGDMatchesReference(t *testing.T) {
	cases := []struct {
		name string
		c    optim.SGDConfig
	}{
		{"plain", optim.SGDConfig{LR: 0.1}},
		{"weight_decay", optim.SGDConfig{LR: 0.1, WeightDecay: 0.05}},
		{"momentum", optim.SGDConfig{LR: 0.1, Momentum: 0.9}},
		{"dampening", optim.SGDConfig{LR: 0.2, Momentum: 0.8, Dampening: 0.3, WeightDecay: 0.01}},
		{"nesterov", optim.SGDConfig{LR: 0.1, Momentum: 0.9, WeightDecay: 0.02, Nesterov: true}},
	}
	for _, c := range cases {
		for _, dt := range []dtype.DType{dtype.F64, dtype.F32} {
			dev := cpu.New(0, device.Options{})
			p := param(dev, dt, "w", adamP0...)
			opt, err := optim.NewSGD(params(p), c.c)
			if err != nil {
				t.Fatal(err)
			}
			var rg [][]float64
			for _, g := range adamGrads {
				setGrad(t, p, g)
				rg = append(rg, round(dt, g))
				if err := opt.Step(); err != nil {
					t.Fatal(err)
				}
			}
			wp, wb := sgdRef(adamP0, rg, c.c.LR, c.c.Momentum, c.c.Dampening, c.c.WeightDecay, c.c.Nesterov)
			near(t, c.name+" "+dt.String()+" p", p.Float64s(), wp, tol(dt))
			st := opt.State()
			if c.c.Momentum != 0 {
				near(t, c.name+" "+dt.String()+" buf", st.Tensors["momentum_buffer.w"].Float64s(), wb, tol(dt))
			} else if len(st.Tensors) != 0 {
				t.Errorf("%s: state tensors %v without momentum", c.name, st.Tensors)
			}
			want := int64(0)
			if c.c.Momentum != 0 {
				want = int64(len(adamP0) * dt.Size())
			}
			if got := dev.Stats().ByTag[device.Optimizer].Current; got != want {
				t.Errorf("%s %s: optimizer bytes %d, want %d", c.name, dt, got, want)
			}
			t.Logf("%s %s: p after 3 steps %.6f", c.name, dt, p.Float64s())
			opt.Release()
			p.Release()
		}
	}
}

// TestSGDNewParameterStartsFresh: a parameter whose first gradient comes
// later starts its buffer then (undampened), while the others continue.
func TestSGDNewParameterStartsFresh(t *testing.T) {
	dev := cpu.New(0, device.Options{})
	a := param(dev, dtype.F64, "a", 1, 2)
	b := param(dev, dtype.F64, "b", 3)
	c := optim.SGDConfig{LR: 0.5, Momentum: 0.9, Dampening: 0.5}
	opt, err := optim.NewSGD(params(a, b), c)
	if err != nil {
		t.Fatal(err)
	}
	defer opt.Release()
	ga := [][]float64{{1, -1}, {2, 0.5}}
	gb := [][]float64{{4}}
	setGrad(t, a, ga[0])
	if err := opt.Step(); err != nil {
		t.Fatal(err)
	}
	setGrad(t, a, ga[1])
	setGrad(t, b, gb[0])
	if err := opt.Step(); err != nil {
		t.Fatal(err)
	}
	wa, _ := sgdRef([]float64{1, 2}, ga, c.LR, c.Momentum, c.Dampening, 0, false)
	wb, _ := sgdRef([]float64{3}, gb, c.LR, c.Momentum, c.Dampening, 0, false)
	near(t, "a", a.Float64s(), wa, 1e-12)
	near(t, "b", b.Float64s(), wb, 1e-12)
}

func TestSGDConfigErrors(t *testing.T) {
	dev := cpu.New(0, device.Options{})
	p := param(dev, dtype.F32, "p", 1)
	for _, c := range []struct {
		c    optim.SGDConfig
		want string
	}{
		{optim.SGDConfig{}, "LR is 0: SGD has no default learning rate"},
		{optim.SGDConfig{LR: -1}, "LR is -1"},
		{optim.SGDConfig{LR: 1, Momentum: -0.5}, "Momentum is -0.5"},
		{optim.SGDConfig{LR: 1, WeightDecay: -1}, "WeightDecay is -1"},
		{optim.SGDConfig{LR: 1, Nesterov: true}, "Nesterov needs Momentum > 0"},
		{optim.SGDConfig{LR: 1, Momentum: 0.9, Dampening: 0.1, Nesterov: true}, "Nesterov needs Momentum > 0 and Dampening 0"},
	} {
		if _, err := optim.NewSGD([]nn.Param{{Name: "p", T: p}}, c.c); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("NewSGD(%+v) error %v, want one containing %q", c.c, err, c.want)
		}
	}
}
