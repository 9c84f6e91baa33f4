package train_test

import (
	"math"
	"math/rand/v2"
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
