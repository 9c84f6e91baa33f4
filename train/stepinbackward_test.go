package train_test

import (
	"errors"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/headroom-ml/headroom/amp"
	"github.com/headroom-ml/headroom/autograd"
	"github.com/headroom-ml/headroom/device"
	"github.com/headroom-ml/headroom/device/cpu"
	"github.com/headroom-ml/headroom/dtype"
	"github.com/headroom-ml/headroom/nn"
	"github.com/headroom-ml/headroom/optim"
	"github.com/headroom-ml/headroom/train"
)

const sibRows, sibIn, sibHidden, sibClasses = 12, 10, 24, 6

// sibRun trains an F64 MLP (10 → 24 → 24 → 6) for 4 steps of k
// micro-batches, the optimizer stepping inside backward or not, and
// returns the losses, the parameters afterwards and the gradient peak.
func sibRun(t *testing.T, mk func([]nn.Param) (optim.Optimizer, error), k int, inBackward bool, scaler ...*amp.Scaler) ([]float64, []float64, int64) {
	t.Helper()
	dev := cpu.New(0, device.Options{})
	b := nn.NewBuilder(dev, dtype.F64, 7)
	m := nn.NewSequential(nn.NewLinear(b, "fc1", sibIn, sibHidden, true), nn.GELU("gelu"),
		nn.NewLinear(b, "fc2", sibHidden, sibHidden, true), nn.GELU("gelu2"),
		nn.NewLinear(b, "fc3", sibHidden, sibClasses, true))
	defer nn.Release(m)
	opt, err := mk(m.Params())
	if err != nil {
		t.Fatal(err)
	}
	defer opt.Release()
	rng := rand.New(rand.NewPCG(3, 9))
	x := make([]float64, 4*sibRows*sibIn)
	for i := range x {
		x[i] = rng.NormFloat64()
	}
	y := make([]int64, 4*sibRows)
	for i := range y {
		y[i] = int64(rng.IntN(sibClasses))
	}
	st := &train.Stepper{Opt: opt, Accum: k, StepInBackward: inBackward, Host: cpu.New(train.UndoHost, device.Options{})}
	if len(scaler) > 0 {
		st.Scaler = scaler[0]
	}
	dev.ResetPeak()
	per := sibRows / k
	var losses []float64
	for step := range 4 {
		loss, stepped, err := st.Step(func(s *autograd.Scope, i int) *autograd.Tensor {
			at := step*sibRows + i*per
			xs := s.FromFloat64s(dev, []int{per, sibIn}, x[at*sibIn:(at+per)*sibIn])
			return autograd.CrossEntropy(m.Forward(xs), s.FromInt64s(dev, []int{per}, y[at:at+per]), autograd.CEOptions{})
		})
		if err != nil || !stepped {
			t.Fatalf("step %d: stepped %v, %v", step, stepped, err)
		}
		losses = append(losses, loss)
	}
	var ps []float64
	for _, p := range m.Params() {
		ps = append(ps, p.T.Float64s()...)
	}
	return losses, ps, dev.Stats().ByTag[device.Gradient].Peak
}

var sibOptimizers = []struct {
	name string
	mk   func([]nn.Param) (optim.Optimizer, error)
}{
	{"sgd momentum", func(ps []nn.Param) (optim.Optimizer, error) {
		return optim.NewSGD(ps, optim.SGDConfig{LR: 0.1, Momentum: 0.9, WeightDecay: 1e-3})
	}},
	{"adamw", func(ps []nn.Param) (optim.Optimizer, error) { return optim.NewAdamW(ps, optim.AdamConfig{LR: 0.01}) }},
}

// TestStepInBackwardBitIdentical: in F64, stepping inside backward gives
// the loss curve and parameters of the normal step bit for bit, with and
// without accumulation, and holds one parameter's gradient at a time
// (without accumulation) instead of all of them.
func TestStepInBackwardBitIdentical(t *testing.T) {
	const f64 = 8
	all := int64(f64 * (sibIn*sibHidden + sibHidden + sibHidden*sibHidden + sibHidden + sibHidden*sibClasses + sibClasses))
	largest := int64(f64 * sibHidden * sibHidden) // fc2.weight
	for _, o := range sibOptimizers {
		for _, k := range []int{1, 3} {
			wantLoss, wantP, plainPeak := sibRun(t, o.mk, k, false)
			gotLoss, gotP, peak := sibRun(t, o.mk, k, true)
			for i := range wantLoss {
				if math.Float64bits(gotLoss[i]) != math.Float64bits(wantLoss[i]) {
					t.Errorf("%s k=%d: loss %d = %v, want %v bit for bit", o.name, k, i, gotLoss[i], wantLoss[i])
				}
			}
			for i := range wantP {
				if math.Float64bits(gotP[i]) != math.Float64bits(wantP[i]) {
					t.Fatalf("%s k=%d: parameter element %d = %v, want %v bit for bit", o.name, k, i, gotP[i], wantP[i])
				}
			}
			t.Logf("%s k=%d: gradient peak %d B in backward, %d B plain (all gradients %d B, largest %d B)", o.name, k, peak, plainPeak, all, largest)
			if plainPeak != all {
				t.Errorf("%s k=%d: plain gradient peak %d B, want all gradients' %d B", o.name, k, plainPeak, all)
			}
			want := largest
			if k > 1 { // the first k−1 micro-batches accumulate every gradient
				want = all
			}
			if peak != want {
				t.Errorf("%s k=%d: gradient peak in backward %d B, want %d B", o.name, k, peak, want)
			}
		}
	}
}

// TestStepInBackwardScaledBitIdentical: under an enabled loss scaler
// (f16 semantics, scale 2^16) each gradient is unscaled inside backward
// as Unscale would do it: the same losses, parameters and scale bit for
// bit.
func TestStepInBackwardScaledBitIdentical(t *testing.T) {
	for _, o := range sibOptimizers {
		plain, sib := amp.NewScaler(dtype.F16, amp.ScalerConfig{GrowthInterval: 2}), amp.NewScaler(dtype.F16, amp.ScalerConfig{GrowthInterval: 2})
		wantLoss, wantP, _ := sibRun(t, o.mk, 1, false, plain)
		gotLoss, gotP, _ := sibRun(t, o.mk, 1, true, sib)
		if !sameBits(gotLoss, wantLoss) || !sameBits(gotP, wantP) || plain.Scale() != sib.Scale() || sib.Scale() != 1<<18 {
			t.Errorf("%s with a scaler: losses %v vs %v, scale %v vs %v (want 2^18 after 4 clean steps): want bit-identical", o.name, gotLoss, wantLoss, sib.Scale(), plain.Scale())
		}
	}
}

// overflowRig is two F32 parameters a and b under an f16 loss scaler
// (scale 2^16) and AdamW, with loss Σ a·d + Σ b·c: backward reaches a
// first, then b, whose gradient is 2^16·c — infinite in F32 when c is
// 1e34 (b is 1e-34, so the loss stays finite).
type overflowRig struct {
	dev   *device.Device
	a, b  *autograd.Tensor
	opt   *optim.Adam
	st    *train.Stepper
	order []string
}

func newOverflowRig(t *testing.T, scaler bool) *overflowRig {
	dev := cpu.New(0, device.Options{})
	a := autograd.Param(dev, dtype.F32, "a", 3)
	a.SetFloat64s([]float64{1, -2, 3})
	b := autograd.Param(dev, dtype.F32, "b", 2)
	b.SetFloat64s([]float64{1e-34, 2e-34})
	opt, err := optim.NewAdamW([]nn.Param{{Name: "a", T: a}, {Name: "b", T: b}}, optim.AdamConfig{LR: 0.01})
	if err != nil {
		t.Fatal(err)
	}
	r := &overflowRig{dev: dev, a: a, b: b, opt: opt, st: &train.Stepper{Opt: opt, StepInBackward: true, Host: cpu.New(train.UndoHost, device.Options{})}}
	if scaler {
		r.st.Scaler = amp.NewScaler(dtype.F16, amp.ScalerConfig{})
	}
	a.OnGradReady(func(*autograd.Tensor) { r.order = append(r.order, "a") })
	b.OnGradReady(func(*autograd.Tensor) { r.order = append(r.order, "b") })
	return r
}

// step runs one step with b's coefficient c (its term multiplied by k).
func (r *overflowRig) step(c float64, k ...float64) (bool, error) {
	r.order = nil
	_, stepped, err := r.st.Step(func(s *autograd.Scope, _ int) *autograd.Tensor {
		d := s.FromFloat64s(r.dev, []int{3}, []float64{0.5, -1, 2}).Cast(dtype.F32)
		cb := s.FromFloat64s(r.dev, []int{2}, []float64{c, c}).Cast(dtype.F32)
		bt := s.Use(r.b).Mul(cb).Sum(false)
		if len(k) > 0 {
			bt = bt.Scale(k[0])
		}
		return bt.Add(s.Use(r.a).Mul(d).Sum(false))
	})
	return stepped, err
}

// snapshot is the parameters and AdamW's state, as float64 bits.
func (r *overflowRig) snapshot() []float64 {
	v := append(r.a.Float64s(), r.b.Float64s()...)
	st := r.opt.State()
	for _, n := range []string{"exp_avg.a", "exp_avg_sq.a", "exp_avg.b", "exp_avg_sq.b"} {
		if x := st.Tensors[n]; x != nil {
			v = append(v, x.Float64s()...)
		}
	}
	return append(v, st.Scalars["step"], st.Scalars["step.a"], st.Scalars["step.b"])
}

func sameBits(a, b []float64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if math.Float64bits(a[i]) != math.Float64bits(b[i]) {
			return false
		}
	}
	return true
}

// TestStepInBackwardOverflowRollsBack: a forced overflow in b's gradient,
// found after a has been updated inside backward, leaves the parameters
// and the optimizer state bit-identical to before the step (its first
// step: no state at all) and halves the scale.
func TestStepInBackwardOverflowRollsBack(t *testing.T) {
	for _, first := range []bool{true, false} {
		r := newOverflowRig(t, true)
		if !first {
			if stepped, err := r.step(1); err != nil || !stepped {
				t.Fatalf("clean step: stepped %v, %v", stepped, err)
			}
		}
		before, optBytes, scale := r.snapshot(), r.dev.Stats().ByTag[device.Optimizer].Current, r.st.Scaler.Scale()
		stepped, err := r.step(1e34)
		if err != nil || stepped {
			t.Fatalf("first %v: overflowing step: stepped %v, %v; want a skipped step", first, stepped, err)
		}
		if strings.Join(r.order, ",") != "a,b" {
			t.Fatalf("gradients ready in order %v, want a before b (a must step before the overflow is seen)", r.order)
		}
		if after := r.snapshot(); !sameBits(after, before) {
			t.Errorf("first %v: after the skipped step\n%v\nwant bit for bit\n%v", first, after, before)
		}
		if got := r.dev.Stats().ByTag[device.Optimizer].Current; got != optBytes {
			t.Errorf("first %v: optimizer bytes %d after the skipped step, want %d", first, got, optBytes)
		}
		if r.st.Scaler.Scale() != scale/2 || r.st.Scaler.Skipped() != 1 || r.st.Scaler.LastOverflow() != "b" {
			t.Errorf("first %v: scale %v (was %v), skipped %d, overflow %q; want it halved, 1 and b", first,
				r.st.Scaler.Scale(), scale, r.st.Scaler.Skipped(), r.st.Scaler.LastOverflow())
		}
		if g := r.dev.Stats().ByTag[device.Gradient].Current; g != 0 {
			t.Errorf("first %v: %d gradient bytes live after the step, want 0", first, g)
		}
		if stepped, err := r.step(1); err != nil || !stepped {
			t.Errorf("first %v: the step after the overflow: stepped %v, %v", first, stepped, err)
		}
		r.opt.Release()
	}
}

// TestStepInBackwardNonFiniteFails: without a loss scaler an infinite
// gradient (of a finite loss) is an error naming the parameter, and the update already made
// to a is undone.
func TestStepInBackwardNonFiniteFails(t *testing.T) {
	r := newOverflowRig(t, false)
	defer r.opt.Release()
	if _, err := r.step(1); err != nil {
		t.Fatal(err)
	}
	r.b.SetFloat64s([]float64{1e-34, 2e-34}) // the step moved it by about lr
	before := r.snapshot()
	_, err := r.step(1e34, 1e10) // a finite loss of about 1e10, b's gradient 1e44
	if err == nil || !strings.Contains(err.Error(), `gradient of "b" is not finite`) {
		t.Fatalf("an infinite gradient without a scaler: %v", err)
	}
	t.Logf("%v", err)
	if after := r.snapshot(); !sameBits(after, before) || r.st.Steps() != 1 {
		t.Errorf("the failed step changed the state: %v, want %v (steps %d, want 1)", after, before, r.st.Steps())
	}
}

// TestStepInBackwardRefuses: clipping, data parallelism and an optimizer
// that cannot update one parameter at a time (not an optim.ParamStepper)
// are refused before any work.
func TestStepInBackwardRefuses(t *testing.T) {
	r := newOverflowRig(t, false)
	defer r.opt.Release()
	q := struct{ optim.Optimizer }{r.opt} // no StepParam
	for _, c := range []struct {
		st   train.Stepper
		want string
	}{
		{train.Stepper{Opt: r.opt, Clip: 1, StepInBackward: true}, "(--step-in-backward) with gradient clipping (--clip 1)"},
		{train.Stepper{Opt: r.opt, Sync: noSync{}, StepInBackward: true}, "with data parallelism"},
		{train.Stepper{Opt: q, StepInBackward: true}, "cannot update one parameter at a time"},
		{train.Stepper{Opt: r.opt, StepInBackward: true}, "no Host device for the undo copies"},
	} {
		calls := 0
		_, _, err := c.st.Step(func(s *autograd.Scope, _ int) *autograd.Tensor { calls++; return s.Use(r.a).Sum(false) })
		if err == nil || !strings.Contains(err.Error(), c.want) || calls != 0 {
			t.Errorf("Step: %v after %d forwards, want an error containing %q before any", err, calls, c.want)
		}
	}
}

type noSync struct{}

func (noSync) NoSync(f func()) { f() }

// failingStepper is an AdamW whose StepParam fails on call fail (1-based).
type failingStepper struct {
	*optim.Adam
	calls, fail int
}

func (f *failingStepper) StepParam(t *autograd.Tensor, host *device.Device) (*optim.Undo, error) {
	if f.calls++; f.calls == f.fail {
		return nil, errors.New("no memory for the state (test)")
	}
	return f.Adam.StepParam(t, host)
}

// TestStepInBackwardFailureRollsBack: an update that fails inside
// backward (the second, after a has stepped) fails the step with that
// error, and the step changes nothing: parameters, state, step counts,
// no gradient left.
func TestStepInBackwardFailureRollsBack(t *testing.T) {
	r := newOverflowRig(t, false)
	defer r.opt.Release()
	if _, err := r.step(1); err != nil {
		t.Fatal(err)
	}
	f := &failingStepper{Adam: r.opt, fail: 2}
	r.st.Opt = f
	before := r.snapshot()
	_, err := r.step(1)
	if err == nil || !strings.Contains(err.Error(), "micro-batch 0 of step 1: no memory for the state (test)") {
		t.Fatalf("a failing update inside backward: %v", err)
	}
	if f.calls != 2 || strings.Join(r.order, ",") != "a,b" {
		t.Fatalf("StepParam called %d times, gradients ready %v; want a updated before b failed", f.calls, r.order)
	}
	if after := r.snapshot(); !sameBits(after, before) || r.st.Steps() != 1 {
		t.Errorf("the failed step changed the state: %v, want %v (steps %d, want 1)", after, before, r.st.Steps())
	}
	if g := r.dev.Stats().ByTag[device.Gradient].Current; g != 0 {
		t.Errorf("%d gradient bytes live after the failed step, want 0", g)
	}
}

// TestStepInBackwardRemovesItsHooks: after a step, a backward outside the
// Stepper only accumulates gradients; no parameter moves.
func TestStepInBackwardRemovesItsHooks(t *testing.T) {
	r := newOverflowRig(t, false)
	defer r.opt.Release()
	if _, err := r.step(1); err != nil {
		t.Fatal(err)
	}
	before := r.snapshot()
	s := autograd.NewScope()
	if err := s.Use(r.a).Sum(false).Add(s.Use(r.b).Sum(false)).Backward(); err != nil {
		t.Fatal(err)
	}
	s.Release()
	if after := r.snapshot(); !sameBits(after, before) || r.a.Grad() == nil || r.b.Grad() == nil {
		t.Errorf("a plain backward after the step changed the state (%v, want %v) or left no gradients", after, before)
	}
	r.opt.ZeroGrad()
}
