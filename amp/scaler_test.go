package amp_test

import (
	"math"
	"strings"
	"testing"

	"github.com/headroom-ml/headroom/amp"
	"github.com/headroom-ml/headroom/autograd"
	"github.com/headroom-ml/headroom/device"
	"github.com/headroom-ml/headroom/device/cpu"
	"github.com/headroom-ml/headroom/dtype"
	"github.com/headroom-ml/headroom/nn"
	"github.com/headroom-ml/headroom/optim"
)

// setup makes two F16 parameters and an Adam optimizer over them.
func setup(t *testing.T) (*device.Device, []*autograd.Tensor, optim.Optimizer) {
	t.Helper()
	dev := cpu.New(0, device.Options{})
	a := autograd.Param(dev, dtype.F16, "a", 3)
	b := autograd.Param(dev, dtype.F16, "b", 2)
	a.SetFloat64s([]float64{0.5, -1, 2})
	b.SetFloat64s([]float64{0.25, 4})
	o, err := optim.NewAdam([]nn.Param{{Name: "a", T: a}, {Name: "b", T: b}}, optim.AdamConfig{LR: 0.01, MasterWeights: true})
	if err != nil {
		t.Fatal(err)
	}
	return dev, []*autograd.Tensor{a, b}, o
}

// backward runs Σ a·ca + Σ b·cb, computed in f32 as a loss should be,
// scaled by sc.
func backward(t *testing.T, sc *amp.Scaler, ps []*autograd.Tensor, ca, cb float64) {
	t.Helper()
	s := autograd.NewScope()
	defer s.Release()
	term := func(p *autograd.Tensor, c float64) *autograd.Tensor {
		return s.Use(p).Cast(dtype.F32).Scale(c).Sum(false)
	}
	loss := term(ps[0], ca).Add(term(ps[1], cb))
	if err := sc.ScaleLoss(loss).Backward(); err != nil {
		t.Fatal(err)
	}
}

func snapshot(ps []*autograd.Tensor, o optim.Optimizer) []float64 {
	var v []float64
	for _, p := range ps {
		v = append(v, p.Float64s()...)
	}
	st := o.State()
	for _, n := range []string{"master.a", "exp_avg.a", "exp_avg_sq.a", "master.b", "exp_avg.b", "exp_avg_sq.b"} {
		if t := st.Tensors[n]; t != nil {
			v = append(v, t.Float64s()...)
		}
	}
	return v
}

func TestOverflowSkipsStepAndBacksOff(t *testing.T) {
	_, ps, o := setup(t)
	sc := amp.NewScaler(dtype.F16, amp.ScalerConfig{})
	if sc.Scale() != 65536 || !sc.Enabled() {
		t.Fatalf("scale %v enabled %v, want 65536 and true", sc.Scale(), sc.Enabled())
	}
	// One clean step creates the optimizer state.
	backward(t, sc, ps, 0.01, 0.01)
	if ran, err := sc.Step(o); !ran || err != nil {
		t.Fatalf("clean step: ran %v, err %v", ran, err)
	}
	if err := sc.Update(); err != nil {
		t.Fatal(err)
	}
	o.ZeroGrad()
	before := snapshot(ps, o)
	// b's gradient 1e3 × 65536 overflows f16 (max 65504): inf.
	backward(t, sc, ps, 0.01, 1000)
	ran, err := sc.Step(o)
	if err != nil || ran {
		t.Fatalf("overflowing step: ran %v, err %v; want skipped", ran, err)
	}
	if sc.LastOverflow() != "b" {
		t.Errorf("overflow blamed on %q, want b", sc.LastOverflow())
	}
	after := snapshot(ps, o)
	for i := range before {
		if math.Float64bits(before[i]) != math.Float64bits(after[i]) {
			t.Fatalf("value %d changed by a skipped step: %v → %v", i, before[i], after[i])
		}
	}
	if err := sc.Update(); err != nil {
		t.Fatal(err)
	}
	if sc.Scale() != 32768 || sc.Skipped() != 1 {
		t.Errorf("after overflow: scale %v skipped %d, want 32768 and 1", sc.Scale(), sc.Skipped())
	}
}

func TestCleanStepsGrowTheScale(t *testing.T) {
	_, ps, o := setup(t)
	sc := amp.NewScaler(dtype.F16, amp.ScalerConfig{})
	for i := range 2000 {
		backward(t, sc, ps, 1e-3, 1e-3)
		if _, err := sc.Step(o); err != nil {
			t.Fatal(err)
		}
		if err := sc.Update(); err != nil {
			t.Fatal(err)
		}
		o.ZeroGrad()
		if i == 1998 && sc.Scale() != 65536 {
			t.Fatalf("scale changed before 2000 clean steps: %v", sc.Scale())
		}
	}
	if sc.Scale() != 131072 {
		t.Errorf("scale after 2000 clean steps = %v, want 131072", sc.Scale())
	}
}

func TestMisuseErrors(t *testing.T) {
	_, ps, o := setup(t)
	sc := amp.NewScaler(dtype.F16, amp.ScalerConfig{})
	if err := sc.Update(); err == nil || !strings.Contains(err.Error(), "no inf checks") {
		t.Errorf("Update first: %v", err)
	}
	backward(t, sc, ps, 1, 1)
	if err := sc.Unscale(o); err != nil {
		t.Fatal(err)
	}
	if err := sc.Unscale(o); err == nil || !strings.Contains(err.Error(), "already been called") {
		t.Errorf("second Unscale: %v", err)
	}
	if _, err := sc.Step(o); err != nil {
		t.Fatal(err)
	}
	if _, err := sc.Step(o); err == nil || !strings.Contains(err.Error(), "Step has already been called") {
		t.Errorf("second Step: %v", err)
	}
	if err := sc.Unscale(o); err == nil || !strings.Contains(err.Error(), "after Step") {
		t.Errorf("Unscale after Step: %v", err)
	}
	if err := sc.Load(amp.ScalerState{Scale: 8}); err == nil {
		t.Error("Load between Step and Update succeeded")
	}
	if err := sc.Update(); err != nil {
		t.Fatal(err)
	}
}

func TestUnscaleDividesGradients(t *testing.T) {
	_, ps, o := setup(t)
	sc := amp.NewScaler(dtype.F16, amp.ScalerConfig{InitScale: 1024})
	backward(t, sc, ps, 0.5, -2)
	if g := ps[0].Grad().Float64s(); g[0] != 512 {
		t.Fatalf("scaled gradient %v, want 0.5·1024", g[0])
	}
	if err := sc.Unscale(o); err != nil {
		t.Fatal(err)
	}
	if g := ps[1].Grad().Float64s(); g[0] != -2 || g[1] != -2 {
		t.Errorf("unscaled gradient %v, want -2", g)
	}
}

func TestStateRoundTrip(t *testing.T) {
	_, ps, o := setup(t)
	sc := amp.NewScaler(dtype.F16, amp.ScalerConfig{GrowthInterval: 3})
	for _, cb := range []float64{1, 1e4, 1} {
		backward(t, sc, ps, 1, cb)
		sc.Step(o)
		sc.Update()
		o.ZeroGrad()
	}
	st := sc.State()
	other := amp.NewScaler(dtype.F16, amp.ScalerConfig{GrowthInterval: 3})
	if err := other.Load(st); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		for _, s := range []*amp.Scaler{sc, other} {
			backward(t, s, ps, 1e-3, 1e-3)
			s.Unscale(o)
			s.Update()
			o.ZeroGrad()
		}
	}
	if sc.State() != other.State() {
		t.Errorf("resumed scaler %+v differs from the original %+v", other.State(), sc.State())
	}
	if err := other.Load(amp.ScalerState{Scale: -1}); err == nil {
		t.Error("Load of a negative scale succeeded")
	}
}

func TestDisabledAndBF16AreNoOps(t *testing.T) {
	for _, sc := range []*amp.Scaler{amp.NewScaler(dtype.BF16, amp.ScalerConfig{}), amp.NewScaler(dtype.F16, amp.ScalerConfig{Disabled: true})} {
		_, ps, o := setup(t)
		if sc.Enabled() || sc.Scale() != 1 {
			t.Errorf("%q: enabled %v scale %v", sc.Note(), sc.Enabled(), sc.Scale())
		}
		backward(t, sc, ps, 1, 1)
		if g := ps[0].Grad().Float64s(); g[0] != 1 {
			t.Errorf("%q: gradient %v, want unscaled 1", sc.Note(), g)
		}
		if ran, err := sc.Step(o); !ran || err != nil {
			t.Errorf("%q: Step ran %v err %v", sc.Note(), ran, err)
		}
		if err := sc.Update(); err != nil {
			t.Errorf("%q: Update: %v", sc.Note(), err)
		}
	}
	if n := amp.NewScaler(dtype.BF16, amp.ScalerConfig{}).Note(); !strings.Contains(n, "not needed") {
		t.Errorf("bf16 note %q should say scaling is not needed", n)
	}
}

// TestMarkAbandonsAnIteration: an iteration abandoned after Unscale, or
// after a skipped Step, is undone by Mark's function — the scale, the
// growth tracker, the skipped count and the last overflow as they were,
// no optimizer recorded — so the iteration can run again from the start
// and ends as it would have.
func TestMarkAbandonsAnIteration(t *testing.T) {
	_, ps, o := setup(t)
	sc := amp.NewScaler(dtype.F16, amp.ScalerConfig{GrowthInterval: 2})
	backward(t, sc, ps, 0.25, 0.25) // one clean iteration: the tracker is at 1
	if _, err := sc.Step(o); err != nil {
		t.Fatal(err)
	}
	if err := sc.Update(); err != nil {
		t.Fatal(err)
	}
	o.ZeroGrad()
	want := sc.State()
	for _, abandon := range []string{"after Unscale", "after a skipped Step"} {
		restore := sc.Mark()
		backward(t, sc, ps, 1e6, 1) // overflows f16 once scaled
		if err := sc.Unscale(o); err != nil {
			t.Fatal(err)
		}
		if abandon == "after a skipped Step" {
			if stepped, err := sc.Step(o); err != nil || stepped {
				t.Fatalf("Step on an overflow: stepped %v, %v", stepped, err)
			}
		}
		restore()
		o.ZeroGrad()
		if got := sc.State(); got != want || sc.LastOverflow() != "" {
			t.Errorf("%s, restored: state %+v, last overflow %q; want %+v and none", abandon, got, sc.LastOverflow(), want)
		}
		backward(t, sc, ps, 0.25, 0.25) // the iteration again, clean: it must be allowed and grow the scale
		if _, err := sc.Step(o); err != nil {
			t.Fatalf("%s: the iteration again: %v", abandon, err)
		}
		if err := sc.Update(); err != nil {
			t.Fatal(err)
		}
		o.ZeroGrad()
		if sc.Scale() != want.Scale*2 {
			t.Errorf("%s: after the clean iteration again the scale is %v, want %v (the second clean one in a row)", abandon, sc.Scale(), want.Scale*2)
		}
		if err := sc.Load(want); err != nil {
			t.Fatal(err)
		}
	}
}
