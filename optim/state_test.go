package optim_test

import (
	"strings"
	"testing"

	"github.com/headroom-ml/headroom/autograd"
	"github.com/headroom-ml/headroom/device"
	"github.com/headroom-ml/headroom/device/cpu"
	"github.com/headroom-ml/headroom/dtype"
	"github.com/headroom-ml/headroom/nn"
	"github.com/headroom-ml/headroom/optim"
)

var roundTripGrads = [][][]float64{ // step, param, values
	{{0.1, -0.2, 0.3}, {1}},
	{{0.4, 0.1, -0.1}, {-2}},
	{{-0.2, 0.3, 0.2}, {0.5}},
}

type maker func([]nn.Param) (optim.Optimizer, error)

var makers = map[string]maker{
	"adam": func(ps []nn.Param) (optim.Optimizer, error) {
		return optim.NewAdam(ps, optim.AdamConfig{LR: 0.1, WeightDecay: 0.01})
	},
	"adamw": func(ps []nn.Param) (optim.Optimizer, error) { return optim.NewAdamW(ps, optim.AdamConfig{LR: 0.1}) },
	"sgd_nesterov": func(ps []nn.Param) (optim.Optimizer, error) {
		return optim.NewSGD(ps, optim.SGDConfig{LR: 0.1, Momentum: 0.9, Nesterov: true, WeightDecay: 0.1})
	},
	"sgd_plain": func(ps []nn.Param) (optim.Optimizer, error) { return optim.NewSGD(ps, optim.SGDConfig{LR: 0.1}) },
}

// run makes parameters w (3) and b (1) and an optimizer over them, and
// takes the given steps. The learning rate of step i is 0.1/(i+1), so the
// loaded lr matters.
func run(t *testing.T, dev *device.Device, dt dtype.DType, mk maker, steps [][][]float64) (optim.Optimizer, []*autograd.Tensor) {
	t.Helper()
	w, b := param(dev, dt, "w", 0.5, -1, 2), param(dev, dt, "b", 0.25)
	opt, err := mk(params(w, b))
	if err != nil {
		t.Fatal(err)
	}
	for i, g := range steps {
		setGrad(t, w, g[0])
		setGrad(t, b, g[1])
		opt.SetLR(0.1 / float64(i+1))
		if err := opt.Step(); err != nil {
			t.Fatal(err)
		}
	}
	return opt, []*autograd.Tensor{w, b}
}

// TestStateRoundTrip: 2 steps, State, Load into a fresh optimizer over
// copies of the parameters, 1 more step equals 3 uninterrupted steps bit
// for bit (parameters and state).
func TestStateRoundTrip(t *testing.T) {
	for name, mk := range makers {
		for _, dt := range []dtype.DType{dtype.F32, dtype.F64} {
			dev := cpu.New(0, device.Options{})
			whole, wp := run(t, dev, dt, mk, roundTripGrads)
			first, fp := run(t, dev, dt, mk, roundTripGrads[:2])
			saved := first.State()
			t.Logf("%s %s: %d tensors, scalars %v", name, dt, len(saved.Tensors), saved.Scalars)

			resumed, rp := run(t, dev, dt, mk, nil)
			for i := range rp {
				rp[i].CopyFrom(fp[i])
			}
			if err := resumed.Load(saved); err != nil {
				t.Fatalf("%s %s: Load: %v", name, dt, err)
			}
			if resumed.LR() != 0.05 {
				t.Errorf("%s: loaded lr %v, want 0.05", name, resumed.LR())
			}
			setGrad(t, rp[0], roundTripGrads[2][0])
			setGrad(t, rp[1], roundTripGrads[2][1])
			resumed.SetLR(0.1 / 3)
			if err := resumed.Step(); err != nil {
				t.Fatal(err)
			}
			for i := range wp {
				same(t, name+" "+dt.String()+" "+wp[i].Name(), rp[i].Float64s(), wp[i].Float64s())
			}
			ws, rs := whole.State(), resumed.State()
			if len(ws.Tensors) != len(rs.Tensors) || len(ws.Scalars) != len(rs.Scalars) {
				t.Errorf("%s: state sizes differ: %d/%d tensors, %d/%d scalars", name, len(rs.Tensors), len(ws.Tensors), len(rs.Scalars), len(ws.Scalars))
			}
			for n, x := range ws.Tensors {
				same(t, name+" "+n, rs.Tensors[n].Float64s(), x.Float64s())
			}
			for n, x := range ws.Scalars {
				if rs.Scalars[n] != x {
					t.Errorf("%s: scalar %s = %v, want %v", name, n, rs.Scalars[n], x)
				}
			}
			for _, o := range []optim.Optimizer{whole, first, resumed} {
				o.Release()
			}
			for _, p := range append(append(wp, fp...), rp...) {
				p.Release()
			}
			if n := dev.CurrentBytes(); n != 0 {
				t.Errorf("%s: %d bytes left: %v", name, n, dev.Live())
			}
		}
	}
}

func TestStateNames(t *testing.T) {
	dev := cpu.New(0, device.Options{})
	opt, ps := run(t, dev, dtype.F32, makers["adamw"], roundTripGrads[:1])
	st := opt.State()
	for _, n := range []string{"exp_avg.w", "exp_avg_sq.w", "exp_avg.b", "exp_avg_sq.b"} {
		if st.Tensors[n] == nil {
			t.Errorf("no tensor %q in %v", n, st.Tensors)
		}
	}
	want := map[string]float64{"step": 1, "step.w": 1, "step.b": 1, "lr": 0.1, "beta1": 0.9, "beta2": 0.999,
		"eps": 1e-8, "weight_decay": 0.01, "decoupled_weight_decay": 1, "master_weights": 0}
	if len(st.Scalars) != len(want) {
		t.Errorf("scalars %v, want %v", st.Scalars, want)
	}
	for n, v := range want {
		if st.Scalars[n] != v {
			t.Errorf("scalar %s = %v, want %v", n, st.Scalars[n], v)
		}
	}
	ps[1].ZeroGrad()
	sgd, _ := makers["sgd_nesterov"](params(ps...))
	setGrad(t, ps[0], []float64{1, 2, 3})
	if err := sgd.Step(); err != nil {
		t.Fatal(err)
	}
	st = sgd.State()
	if len(st.Tensors) != 1 || st.Tensors["momentum_buffer.w"] == nil || st.Scalars["nesterov"] != 1 || st.Scalars["momentum"] != 0.9 {
		t.Errorf("sgd state %v %v", st.Tensors, st.Scalars)
	}
	opt.Release()
	sgd.Release()
}

// TestLoadRejects: every kind of bad State is refused with an error that
// names the problem, and the optimizer is left as it was.
func TestLoadRejects(t *testing.T) {
	dev := cpu.New(0, device.Options{})
	src, sp := run(t, dev, dtype.F32, makers["adam"], roundTripGrads[:2])
	defer src.Release()
	good := src.State()
	edit := func(f func(s *optim.State)) optim.State {
		s := optim.State{Tensors: map[string]*autograd.Tensor{}, Scalars: map[string]float64{}}
		for n, x := range good.Tensors {
			s.Tensors[n] = x
		}
		for n, x := range good.Scalars {
			s.Scalars[n] = x
		}
		f(&s)
		return s
	}
	wrong := autograd.New(dev, dtype.F32, device.Other, 4)
	defer wrong.Release()
	f64 := autograd.New(dev, dtype.F64, device.Other, 3)
	defer f64.Release()
	cases := []struct {
		name string
		s    optim.State
		want string
	}{
		{"shape", edit(func(s *optim.State) { s.Tensors["exp_avg.w"] = wrong }), `tensor "exp_avg.w" is [4] f32, want [3] f32`},
		{"dtype", edit(func(s *optim.State) { s.Tensors["exp_avg.w"] = f64 }), `is [3] f64`},
		{"unknown tensor", edit(func(s *optim.State) { s.Tensors["exp_avg.x"] = wrong }), `unknown tensor "exp_avg.x"`},
		{"missing tensor", edit(func(s *optim.State) { delete(s.Tensors, "exp_avg_sq.b") }), `tensor "exp_avg_sq.b" is missing`},
		{"beta2", edit(func(s *optim.State) { s.Scalars["beta2"] = 0.99 }), "beta2 = 0.99, this optimizer 0.999"},
		{"adamw state", edit(func(s *optim.State) { s.Scalars["decoupled_weight_decay"] = 1 }), "decoupled_weight_decay = 1"},
		{"missing step", edit(func(s *optim.State) { delete(s.Scalars, "step") }), `scalar "step" is missing`},
		{"missing param step", edit(func(s *optim.State) { delete(s.Scalars, "step.w") }), `scalar "step.w" is missing`},
		{"fractional step", edit(func(s *optim.State) { s.Scalars["step.w"] = 1.5 }), "step.w = 1.5"},
		{"unknown scalar", edit(func(s *optim.State) { s.Scalars["momentum"] = 0.9 }), `unknown scalar "momentum"`},
		{"bad lr", edit(func(s *optim.State) { s.Scalars["lr"] = -1 }), "lr -1"},
	}
	// Into a fresh optimizer and into one that has stepped.
	for _, steps := range [][][][]float64{nil, roundTripGrads[2:]} {
		dst, dp := run(t, dev, dtype.F32, makers["adam"], steps)
		for _, c := range cases {
			v0, s0 := snapshot(dst, dp...)
			optBytes := dev.Stats().ByTag[device.Optimizer].Current
			err := dst.Load(c.s)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("Load(%s): error %v, want one containing %q", c.name, err, c.want)
				continue
			}
			unchanged(t, dst, v0, s0, dp...)
			if got := dev.Stats().ByTag[device.Optimizer].Current; got != optBytes {
				t.Errorf("Load(%s) moved optimizer bytes %d → %d", c.name, optBytes, got)
			}
		}
		t.Logf("last error: %v", dst.Load(cases[0].s))
		if err := dst.Load(good); err != nil {
			t.Errorf("Load(good): %v", err)
		}
		for _, p := range dp {
			p.Release()
		}
		dst.Release()
	}
	for _, p := range sp {
		p.Release()
	}
}

// TestLoadOOM: loading into a fresh optimizer on a device that cannot
// hold the state fails and allocates nothing.
func TestLoadOOM(t *testing.T) {
	big := cpu.New(0, device.Options{})
	src, sp := run(t, big, dtype.F32, makers["adam"], roundTripGrads[:1])
	defer src.Release()
	small := cpu.New(1, device.Options{})
	w, b := param(small, dtype.F32, "w", 1, 2, 3), param(small, dtype.F32, "b", 4)
	dst, err := optim.NewAdam(params(w, b), optim.AdamConfig{LR: 0.1, WeightDecay: 0.01})
	if err != nil {
		t.Fatal(err)
	}
	// Room for the first state tensor only.
	free := fillCache(t, small, 12)
	allocs := small.Stats().ByTag[device.Optimizer].Allocs
	err = dst.Load(src.State())
	if !autograd.IsOOM(err) {
		t.Fatalf("Load on a full device: %v, want an OOM error", err)
	}
	t.Logf("%v", err)
	if got := small.Stats().ByTag[device.Optimizer].Current; got != 0 {
		t.Errorf("failed Load left %d optimizer bytes", got)
	}
	if small.Stats().ByTag[device.Optimizer].Allocs == allocs {
		t.Errorf("the failed Load allocated nothing before running out; the test does not exercise the rollback")
	}
	free()
	if err := dst.Load(src.State()); err != nil { // across devices
		t.Fatal(err)
	}
	same(t, "exp_avg.w", dst.State().Tensors["exp_avg.w"].Float64s(), src.State().Tensors["exp_avg.w"].Float64s())
	dst.Release()
	for _, p := range sp {
		p.Release()
	}
}
