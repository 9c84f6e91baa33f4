package optim_test

import (
	"math"
	"strings"
	"testing"

	"github.com/headroom-ml/headroom/device"
	"github.com/headroom-ml/headroom/device/cpu"
	"github.com/headroom-ml/headroom/device/meta"
	"github.com/headroom-ml/headroom/dtype"
	"github.com/headroom-ml/headroom/nn"
	"github.com/headroom-ml/headroom/optim"
)

var (
	adamP0    = []float64{0.5, -1.5, 2, 0.125, -0.25}
	adamGrads = [][]float64{
		{0.1, -0.2, 0.3, 1.5, -0.05},
		{0.2, 0.1, -0.4, 1.0, 0.0},
		{-0.3, 0.25, 0.5, -2.0, 0.01},
	}
)

// adamRef is Adam by Kingma and Ba's algorithm, with PyTorch's two kinds of
// weight decay, in float64: it returns p, m, v after the steps.
func adamRef(p0 []float64, grads [][]float64, lr, b1, b2, eps, wd float64, decoupled bool) (p, m, v []float64) {
	p = append([]float64(nil), p0...)
	m, v = make([]float64, len(p)), make([]float64, len(p))
	for t, g := range grads {
		bc1 := 1 - math.Pow(b1, float64(t+1))
		bc2 := 1 - math.Pow(b2, float64(t+1))
		for i := range p {
			gi := g[i]
			if decoupled {
				p[i] *= 1 - lr*wd
			} else {
				gi += wd * p[i]
			}
			m[i] = b1*m[i] + (1-b1)*gi
			v[i] = b2*v[i] + (1-b2)*gi*gi
			p[i] -= lr * (m[i] / bc1) / (math.Sqrt(v[i]/bc2) + eps)
		}
	}
	return p, m, v
}

func TestAdamMatchesReference(t *testing.T) {
	cases := []struct {
		name string
		mk   func([]nn.Param, optim.AdamConfig) (*optim.Adam, error)
		c    optim.AdamConfig
		// resolved hyperparameters for the reference
		lr, b1, b2, eps, wd float64
		decoupled           bool
	}{
		{"adam_defaults", optim.NewAdam, optim.AdamConfig{}, 1e-3, 0.9, 0.999, 1e-8, 0, false},
		{"adam_l2", optim.NewAdam, optim.AdamConfig{LR: 0.1, Beta1: 0.8, Beta2: 0.99, Eps: 1e-6, WeightDecay: 0.1}, 0.1, 0.8, 0.99, 1e-6, 0.1, false},
		{"adam_beta1_zero", optim.NewAdam, optim.AdamConfig{LR: 0.05, Beta1: optim.Zero}, 0.05, 0, 0.999, 1e-8, 0, false},
		{"adamw_defaults", optim.NewAdamW, optim.AdamConfig{LR: 0.1}, 0.1, 0.9, 0.999, 1e-8, 0.01, true},
		{"adamw_wd", optim.NewAdamW, optim.AdamConfig{LR: 0.1, WeightDecay: 0.5}, 0.1, 0.9, 0.999, 1e-8, 0.5, true},
		{"adamw_no_wd", optim.NewAdamW, optim.AdamConfig{LR: 0.1, WeightDecay: optim.Zero}, 0.1, 0.9, 0.999, 1e-8, 0, true},
	}
	for _, c := range cases {
		for _, dt := range []dtype.DType{dtype.F64, dtype.F32} {
			dev := cpu.New(0, device.Options{})
			p := param(dev, dt, "w", adamP0...)
			opt, err := c.mk(params(p), c.c)
			if err != nil {
				t.Fatal(err)
			}
			var rg [][]float64
			for step, g := range adamGrads {
				setGrad(t, p, g)
				rg = append(rg, round(dt, g))
				if err := opt.Step(); err != nil {
					t.Fatalf("%s %s step %d: %v", c.name, dt, step, err)
				}
				if step == 0 && c.wd == 0 {
					// Closed form of the first step without weight decay:
					// m̂ = g and v̂ = g², so p moves by lr·g/(|g|+eps).
					want := make([]float64, len(adamP0))
					for i, gi := range rg[0] {
						want[i] = adamP0[i] - c.lr*gi/(math.Abs(gi)+c.eps)
					}
					near(t, c.name+" "+dt.String()+" first step", p.Float64s(), want, tol(dt))
				}
			}
			wp, wm, wv := adamRef(adamP0, rg, c.lr, c.b1, c.b2, c.eps, c.wd, c.decoupled)
			st := opt.State()
			near(t, c.name+" "+dt.String()+" p", p.Float64s(), wp, tol(dt))
			near(t, c.name+" "+dt.String()+" m", st.Tensors["exp_avg.w"].Float64s(), wm, tol(dt))
			near(t, c.name+" "+dt.String()+" v", st.Tensors["exp_avg_sq.w"].Float64s(), wv, tol(dt))
			t.Logf("%s %s: p after 3 steps %.6f", c.name, dt, p.Float64s())
			opt.Release()
			p.Release()
			if n := dev.CurrentBytes(); n != 0 {
				t.Errorf("%s: %d bytes left", c.name, n)
			}
		}
	}
}

// buildMLP makes Linear(7,5) → Linear(5,3) parameters with gradients.
func buildMLP(t *testing.T, dev *device.Device, dt dtype.DType) (*nn.Sequential, []nn.Param) {
	t.Helper()
	b := nn.NewBuilder(dev, dt, 3)
	m := nn.NewSequential(nn.NewLinear(b, "fc1", 7, 5, true), nn.NewLinear(b, "fc2", 5, 3, true))
	ps := nn.Trainable(m)
	for i, p := range ps {
		g := make([]float64, p.T.Len())
		for j := range g {
			g[j] = float64((i+1)*(j%5)) * 0.01
		}
		setGrad(t, p.T, g)
	}
	return m, ps
}

// TestAdamStateBytes checks the documented memory: exactly 2·size bytes
// per parameter element, tagged optimizer, labelled by parameter, nothing
// else allocated by Step — the same on cpu and meta.
func TestAdamStateBytes(t *testing.T) {
	for _, dt := range []dtype.DType{dtype.F32, dtype.F64} {
		var stats []device.Stats
		for _, dev := range []*device.Device{cpu.New(0, device.Options{}), meta.New(0, device.Options{})} {
			m, ps := buildMLP(t, dev, dt)
			n := nn.Count(m) // 7·5+5 + 5·3+3 = 58
			opt, err := optim.NewAdamW(ps, optim.AdamConfig{})
			if err != nil {
				t.Fatal(err)
			}
			if got := dev.Stats().ByTag[device.Optimizer].Current; got != 0 {
				t.Errorf("%s %s: %d optimizer bytes before the first step, want 0 (lazy)", dev.Kind(), dt, got)
			}
			before := dev.Stats().Requested.Current
			dev.ResetPeak()
			for range 2 {
				if err := opt.Step(); err != nil {
					t.Fatal(err)
				}
			}
			want := 2 * int64(dt.Size()) * n
			st := dev.Stats()
			if got := st.ByTag[device.Optimizer].Current; got != want {
				t.Errorf("%s %s: optimizer state %d bytes, want 2·%d·%d = %d", dev.Kind(), dt, got, dt.Size(), n, want)
			}
			if got := opt.StateBytes(); got != want {
				t.Errorf("StateBytes() = %d, want %d", got, want)
			}
			if st.Requested.Current != before+want || st.Requested.Peak != before+want {
				t.Errorf("%s %s: step took current %d peak %d, want both %d (no temporaries)", dev.Kind(), dt, st.Requested.Current, st.Requested.Peak, before+want)
			}
			found := false
			for _, g := range dev.Live() {
				if g.Tag == device.Optimizer && g.Creator == "fc1.weight/exp_avg_sq" {
					found = g.Bytes == 35*int64(dt.Size())
				}
			}
			if !found {
				t.Errorf("%s %s: no live group fc1.weight/exp_avg_sq of 35 elements in %v", dev.Kind(), dt, dev.Live())
			}
			t.Logf("%s %s: %d parameters, %d optimizer bytes", dev.Kind(), dt, n, st.ByTag[device.Optimizer].Current)
			stats = append(stats, st)
			opt.Release()
			if got := dev.Stats().ByTag[device.Optimizer].Current; got != 0 {
				t.Errorf("%s: %d optimizer bytes after Release", dev.Kind(), got)
			}
			nn.Release(m)
		}
		if stats[0].ByTag != stats[1].ByTag || stats[0].Requested != stats[1].Requested {
			t.Errorf("%s: cpu and meta accounting differ:\n%+v\n%+v", dt, stats[0].ByTag, stats[1].ByTag)
		}
	}
}

// TestAdamSkips: buffers and parameters without a gradient get no state
// and are not written; every written block's version moves.
func TestAdamSkips(t *testing.T) {
	dev := cpu.New(0, device.Options{})
	a := param(dev, dtype.F32, "a", 1, 2)
	b := param(dev, dtype.F32, "b", 3, 4)  // no gradient
	buf := param(dev, dtype.F32, "buf", 5) // a buffer, even with a gradient
	setGrad(t, a, []float64{1, 1})
	setGrad(t, buf, []float64{1})
	opt, err := optim.NewAdam([]nn.Param{{Name: "a", T: a}, {Name: "b", T: b}, {Name: "buf", T: buf, Buffer: true}}, optim.AdamConfig{})
	if err != nil {
		t.Fatal(err)
	}
	defer opt.Release()
	va, vb := a.Block().Version(), b.Block().Version()
	if err := opt.Step(); err != nil {
		t.Fatal(err)
	}
	if got := dev.Stats().ByTag[device.Optimizer].Current; got != 16 {
		t.Errorf("optimizer bytes %d, want 16 (a only)", got)
	}
	if a.Block().Version() == va || b.Block().Version() != vb {
		t.Errorf("versions a %d→%d (want a change), b %d→%d (want none)", va, a.Block().Version(), vb, b.Block().Version())
	}
	st := opt.State()
	for _, n := range []string{"exp_avg.a", "exp_avg_sq.a"} {
		if st.Tensors[n] == nil {
			t.Errorf("state has no %s", n)
		}
	}
	if len(st.Tensors) != 2 || st.Scalars["step.a"] != 1 || st.Scalars["step"] != 1 {
		t.Errorf("state tensors %v, scalars %v", st.Tensors, st.Scalars)
	}
	same(t, "b", b.Float64s(), []float64{3, 4})
	same(t, "buf", buf.Float64s(), []float64{5})
}

func TestAdamConfigErrors(t *testing.T) {
	dev := cpu.New(0, device.Options{})
	p := param(dev, dtype.F32, "p", 1)
	for _, c := range []struct {
		c    optim.AdamConfig
		want string
	}{
		{optim.AdamConfig{LR: -1e-3}, "LR is -0.001"},
		{optim.AdamConfig{Beta1: 1}, "Beta1 is 1"},
		{optim.AdamConfig{Beta2: 1.5}, "Beta2 is 1.5"},
		{optim.AdamConfig{Eps: math.NaN()}, "Eps is NaN"},
		{optim.AdamConfig{WeightDecay: -2}, "WeightDecay is -2"},
	} {
		if _, err := optim.NewAdam(params(p), c.c); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("NewAdam(%+v) error %v, want one containing %q", c.c, err, c.want)
		}
	}
	q := param(dev, dtype.F32, "p", 2)
	for _, c := range []struct {
		ps   []nn.Param
		want string
	}{
		{nil, "no trainable parameters"},
		{[]nn.Param{{Name: "p", T: p}, {Name: "p", T: q}}, `two parameters are named "p"`},
		{[]nn.Param{{Name: "p", T: p}, {Name: "tied", T: p}}, "same tensor"},
		{[]nn.Param{{T: p}}, "has no name"},
	} {
		if _, err := optim.NewAdam(c.ps, optim.AdamConfig{}); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("NewAdam(%d params) error %v, want one containing %q", len(c.ps), err, c.want)
		}
	}
}
