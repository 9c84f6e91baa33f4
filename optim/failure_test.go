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

// snapshot copies the values of every parameter and state tensor and the
// scalars of an optimizer's state.
func snapshot(opt optim.Optimizer, ps ...*autograd.Tensor) (map[string][]float64, map[string]float64) {
	v := map[string][]float64{}
	for _, p := range ps {
		v["param."+p.Name()] = p.Float64s()
	}
	st := opt.State()
	for n, t := range st.Tensors {
		v[n] = t.Float64s()
	}
	sc := map[string]float64{}
	for n, x := range st.Scalars {
		sc[n] = x
	}
	return v, sc
}

func unchanged(t *testing.T, opt optim.Optimizer, v0 map[string][]float64, s0 map[string]float64, ps ...*autograd.Tensor) {
	t.Helper()
	v1, s1 := snapshot(opt, ps...)
	if len(v1) != len(v0) || len(s1) != len(s0) {
		t.Fatalf("state changed shape: %d tensors and %d scalars, want %d and %d", len(v1), len(s1), len(v0), len(s0))
	}
	for n, want := range v0 {
		same(t, n, v1[n], want)
	}
	for n, want := range s0 {
		if s1[n] != want {
			t.Errorf("scalar %s = %v, want %v", n, s1[n], want)
		}
	}
}

// TestStepFailureChangesNothing: a parameter the kernels cannot update
// (a strided view) makes Step fail before it writes the others or their
// state, and the run continues exactly as if the failed Step had not been
// called.
func TestStepFailureChangesNothing(t *testing.T) {
	for _, mk := range []func([]nn.Param) (optim.Optimizer, error){
		func(ps []nn.Param) (optim.Optimizer, error) { return optim.NewAdam(ps, optim.AdamConfig{LR: 0.1}) },
		func(ps []nn.Param) (optim.Optimizer, error) {
			return optim.NewSGD(ps, optim.SGDConfig{LR: 0.1, Momentum: 0.9})
		},
	} {
		dev := cpu.New(0, device.Options{})
		a := param(dev, dtype.F32, "a", 1, -2, 3)
		buf := autograd.FromFloat64s(dev, []int{2, 2}, []float64{0.5, 1, -1, 2})
		h := buf.T().SetName("h").SetRequiresGrad(true) // columns of buf: not contiguous
		buf.Release()
		opt, err := mk(params(a, h))
		if err != nil {
			t.Fatal(err)
		}
		setGrad(t, a, []float64{0.1, 0.2, 0.3})
		if err := opt.Step(); err != nil { // a gets state; h has no gradient
			t.Fatal(err)
		}
		setGrad(t, a, []float64{-0.3, 0.2, 0.5})
		setGrad(t, h, []float64{1, 1, 1, 1})
		v0, s0 := snapshot(opt, a, h)
		va := a.Block().Version()
		err = opt.Step()
		if err == nil || !strings.Contains(err.Error(), `parameter "h" ([2 2], strides [1 2]) is not contiguous`) {
			t.Fatalf("Step with a strided parameter: error %v", err)
		}
		t.Logf("%v", err)
		unchanged(t, opt, v0, s0, a, h)
		if a.Block().Version() != va {
			t.Errorf("a's version moved on a failed step")
		}
		// Without h's gradient the step succeeds, and equals the second
		// step of an optimizer that never failed.
		h.ZeroGrad()
		if err := opt.Step(); err != nil {
			t.Fatal(err)
		}
		ref := param(dev, dtype.F32, "a", 1, -2, 3)
		ro, _ := mk(params(ref))
		for _, g := range [][]float64{{0.1, 0.2, 0.3}, {-0.3, 0.2, 0.5}} {
			setGrad(t, ref, g)
			if err := ro.Step(); err != nil {
				t.Fatal(err)
			}
		}
		same(t, "a after recovery", a.Float64s(), ref.Float64s())
		opt.Release()
		ro.Release()
	}
}

// TestStepOOMChangesNothing: when the device cannot hold a new
// parameter's state, Step returns the OOM error, frees the state it had
// allocated in that call, and leaves parameters and existing state as
// they were.
func TestStepOOMChangesNothing(t *testing.T) {
	dev := cpu.New(0, device.Options{})
	const n = 100_000 // 400 KB per F32 tensor: small-segment blocks
	mk := func(name string, c float64) *autograd.Tensor {
		v := make([]float64, n)
		for i := range v {
			v[i] = c + float64(i%7)*0.125
		}
		return param(dev, dtype.F32, name, v...)
	}
	grad := func(c float64) []float64 {
		g := make([]float64, n)
		for i := range g {
			g[i] = c * float64(i%5-2)
		}
		return g
	}
	a, b, c := mk("a", 1), mk("b", -1), mk("c", 0.5)
	opt, err := optim.NewAdam(params(a, b, c), optim.AdamConfig{LR: 0.01})
	if err != nil {
		t.Fatal(err)
	}
	defer opt.Release()
	setGrad(t, a, grad(1))
	if err := opt.Step(); err != nil {
		t.Fatal(err)
	}
	setGrad(t, a, grad(2))
	setGrad(t, b, grad(3))
	setGrad(t, c, grad(4))
	v0, s0 := snapshot(opt, a, b, c)
	optBytes := dev.Stats().ByTag[device.Optimizer]
	// Room for b's first state tensor, not for the other three.
	free := fillCache(t, dev, 4*n)
	optBytes = dev.Stats().ByTag[device.Optimizer]
	err = opt.Step()
	if !autograd.IsOOM(err) || !strings.Contains(err.Error(), "nothing was changed") {
		t.Fatalf("Step on a full device: error %v, want an OOM error", err)
	}
	t.Logf("%v", err)
	after := dev.Stats().ByTag[device.Optimizer]
	if after.Current != optBytes.Current {
		t.Errorf("optimizer bytes %d after the failed step, want %d", after.Current, optBytes.Current)
	}
	if after.Allocs == optBytes.Allocs {
		t.Errorf("the failed step allocated no state before running out; the test does not exercise the rollback")
	}
	unchanged(t, opt, v0, s0, a, b, c)
	free()
	if err := opt.Step(); err != nil {
		t.Fatal(err)
	}
	if got, want := opt.StateBytes(), int64(3*8*n); got != want {
		t.Errorf("state %d bytes, want %d", got, want)
	}
}

// TestStepBadLR: a learning rate set outside the valid range fails the
// step without writing anything.
func TestStepBadLR(t *testing.T) {
	dev := cpu.New(0, device.Options{})
	p := param(dev, dtype.F64, "p", 1, 2)
	opt, err := optim.NewSGD(params(p), optim.SGDConfig{LR: 0.1, Momentum: 0.5})
	if err != nil {
		t.Fatal(err)
	}
	defer opt.Release()
	setGrad(t, p, []float64{1, 1})
	opt.SetLR(-0.1)
	if err := opt.Step(); err == nil || !strings.Contains(err.Error(), "learning rate -0.1") {
		t.Errorf("Step with lr -0.1: error %v", err)
	}
	if opt.StateBytes() != 0 {
		t.Errorf("a failed first step left %d state bytes", opt.StateBytes())
	}
	same(t, "p", p.Float64s(), []float64{1, 2})
}
