package train_test

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/headroom-ml/headroom/autograd"
	"github.com/headroom-ml/headroom/device"
	"github.com/headroom-ml/headroom/device/cpu"
	"github.com/headroom-ml/headroom/dtype"
	"github.com/headroom-ml/headroom/nn"
	"github.com/headroom-ml/headroom/optim"
	"github.com/headroom-ml/headroom/train"
)

// accumRun takes one optimizer step over a batch of 8 rows split into k
// micro-batches and returns the parameters afterwards and the activation
// peak.
func accumRun(t *testing.T, dt dtype.DType, k int) ([]float64, int64) {
	t.Helper()
	const rows, in, hidden, classes = 16, 12, 32, 5
	dev := cpu.New(0, device.Options{})
	b := nn.NewBuilder(dev, dt, 3)
	m := nn.NewSequential(nn.NewLinear(b, "fc1", in, hidden, true), nn.GELU("gelu"), nn.NewLinear(b, "fc2", hidden, classes, true))
	defer nn.Release(m)
	opt, err := optim.NewSGD(m.Params(), optim.SGDConfig{LR: 0.5, Momentum: 0.9})
	if err != nil {
		t.Fatal(err)
	}
	defer opt.Release()
	rng := rand.New(rand.NewPCG(5, 5))
	x := make([]float64, rows*in)
	for i := range x {
		x[i] = rng.NormFloat64()
	}
	y := make([]int64, rows)
	for i := range y {
		y[i] = int64(rng.IntN(classes))
	}
	st := &train.Stepper{Opt: opt, Accum: k}
	dev.ResetPeak()
	per := rows / k
	if _, _, err := st.Step(func(s *autograd.Scope, i int) *autograd.Tensor {
		xs := s.FromFloat64s(dev, []int{per, in}, x[i*per*in:(i+1)*per*in])
		if dt != dtype.F64 {
			xs = xs.Cast(dt)
		}
		return autograd.CrossEntropy(m.Forward(xs), s.FromInt64s(dev, []int{per}, y[i*per:(i+1)*per]), autograd.CEOptions{})
	}); err != nil {
		t.Fatal(err)
	}
	peak := dev.Stats().ByTag[device.Activation].Peak
	var ps []float64
	for _, p := range m.Params() {
		ps = append(ps, p.T.Float64s()...)
	}
	return ps, peak
}

// TestAccumulationEqualsOneBigBatch: k micro-batches with the loss divided
// by k give the update of one batch k times larger, with about 1/k of the
// activations.
func TestAccumulationEqualsOneBigBatch(t *testing.T) {
	for _, c := range []struct {
		dt  dtype.DType
		tol float64
	}{{dtype.F64, 1e-10}, {dtype.F32, 1e-5}} {
		whole, p1 := accumRun(t, c.dt, 1)
		for _, k := range []int{2, 4} {
			acc, pk := accumRun(t, c.dt, k)
			for i := range whole {
				if d := math.Abs(whole[i] - acc[i]); d > c.tol {
					t.Fatalf("%s k=%d: parameter %d differs by %.3g (tolerance %g)", c.dt, k, i, d, c.tol)
				}
			}
			ratio := float64(pk) / float64(p1)
			t.Logf("%s k=%d: activation peak %d B against %d B, ratio %.3f", c.dt, k, pk, p1, ratio)
			if ratio > 1/float64(k)+0.05 {
				t.Errorf("%s k=%d: activation peak ratio %.3f, want about 1/%d", c.dt, k, ratio, k)
			}
		}
	}
}

// TestNonFiniteLossStopsTheStep: a learning rate of 1e30 sends the
// parameters to ±1e30 in one step, and the next step's loss (the GPT's) or
// gradients (the ResNet's: batch-norm keeps its loss finite) are not.
// Without a loss scaler that is an error naming the step (and the
// micro-batch of a loss), and the failed step changes nothing; with an enabled scaler
// (f16 parameters) a non-finite loss is the scaler's business: its
// gradients overflow and it skips the step, as PyTorch's GradScaler does.
func TestNonFiniteLossStopsTheStep(t *testing.T) {
	for _, x := range []struct {
		c    setup
		want string
	}{
		{setup{model: "resnet", accum: 2, onCPU: true}, "step 1: gradient norm is NaN"},
		{setup{model: "gpt", accum: 1, onCPU: true}, "micro-batch 0 of step 1: loss is NaN"},
	} {
		c, want := x.c, x.want
		r := newRig(t, c)
		r.st.Schedule, r.st.Clip = nil, 0 // no clipping: the norm is checked all the same
		r.opt.SetLR(1e30)
		r.step(t)
		before := r.state()
		loss, _, err := r.st.Step(r.fwd)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Fatalf("%v: a step at loss %v returned %v, want %q", c, loss, err, want)
		}
		t.Logf("%v: %v", c, err)
		if d := stateDiff(before, r.state()); len(d) > 0 {
			t.Errorf("%v: the failed step changed %v", c, d)
		}
		r.release()
	}
	r := newRig(t, setup{model: "gpt", accum: 1, scaler: true, onCPU: true})
	w := r.model.Params()[0].T
	w.SetFloat64s(append([]float64{math.Inf(1)}, w.Float64s()[1:]...))
	scale := r.st.Scaler.Scale()
	loss, stepped, err := r.st.Step(r.fwd)
	if err != nil || stepped || !math.IsNaN(loss) && !math.IsInf(loss, 0) {
		t.Fatalf("f16 with a scaler, an infinite weight: loss %v, stepped %v, error %v; want a skipped step", loss, stepped, err)
	}
	if r.st.Scaler.Scale() != scale/2 || r.st.Steps() != 1 {
		t.Errorf("after the skipped step: scale %v (was %v), steps %d; want the scale halved and the step counted", r.st.Scaler.Scale(), scale, r.st.Steps())
	}
	r.release()
}

// TestStepWithoutLoss: a forward that returns no loss is an error naming
// the micro-batch, not a Go panic, and the step changes nothing.
func TestStepWithoutLoss(t *testing.T) {
	r := newRig(t, setup{model: "gpt", accum: 2, onCPU: true})
	defer r.release()
	before := r.state()
	calls := 0
	_, _, err := r.st.Step(func(s *autograd.Scope, i int) *autograd.Tensor {
		if calls++; i == 1 {
			return nil
		}
		return r.fwd(s, i)
	})
	if err == nil || !strings.Contains(err.Error(), "micro-batch 1 of step 0: forward returned no loss") {
		t.Fatalf("a forward without a loss: %v", err)
	}
	if d := stateDiff(before, r.state()); len(d) > 0 || calls != 2 {
		t.Errorf("the failed step changed %v (forward called %d times)", d, calls)
	}
}
