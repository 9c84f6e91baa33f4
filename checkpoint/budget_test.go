package checkpoint_test

import (
	"testing"

	"github.com/headroom-ml/headroom/autograd"
	"github.com/headroom-ml/headroom/checkpoint"
	"github.com/headroom-ml/headroom/device"
	"github.com/headroom-ml/headroom/device/cpu"
	"github.com/headroom-ml/headroom/device/meta"
	"github.com/headroom-ml/headroom/dtype"
)

// budgetStep runs one step through a Budget and returns the activation peak.
func budgetStep(t *testing.T, dev *device.Device, m *model, b *checkpoint.Budget) int64 {
	t.Helper()
	s := autograd.NewScope()
	defer s.Release()
	dev.ResetPeak()
	x := s.Full(dev, dtype.F32, 0.5, 8, m.blocks[0].w1.Dim(1))
	loss := b.Forward(m.layers, x).Sum(false) // the loss saves nothing: 4 bytes on top
	if err := loss.Backward(); err != nil {
		t.Fatal(err)
	}
	for _, bl := range m.blocks {
		for _, p := range bl.Params() {
			p.T.ZeroGrad()
		}
	}
	return dev.Stats().ByTag[device.Activation].Peak
}

func TestBudgetStaysUnderBudget(t *testing.T) {
	dev := meta.New(0, device.Options{})
	m := newModel(dev, dtype.F32, 16, 64, false)
	defer m.release()
	pb := checkpoint.NewBudget(1 << 40)
	budgetStep(t, dev, m, pb) // measures
	plain := budgetStep(t, dev, m, pb)
	if starts, _, _ := pb.Plan(); len(starts) != 1 || starts[0] != 0 {
		t.Fatalf("an unlimited budget should run plain, plan %v", starts)
	}
	prevRecomputed := 1 << 30
	for _, frac := range []float64{0.25, 0.4, 0.6, 0.9} {
		b := checkpoint.NewBudget(int64(frac * float64(plain)))
		first := budgetStep(t, dev, m, b)
		peak := budgetStep(t, dev, m, b)
		starts, est, fits := b.Plan()
		recomputed := starts[len(starts)-1]
		t.Logf("budget %.2f×plain (%d B): first step %d B; plan %v, estimate %d B, fits %v; measured %d B; %d of 16 layers recomputed",
			frac, b.Bytes, first, starts, est, fits, peak, recomputed)
		if !fits {
			t.Errorf("budget %d B: no plan fits", b.Bytes)
		}
		if peak > b.Bytes+4 {
			t.Errorf("budget %d B: measured activation peak %d B is over budget", b.Bytes, peak)
		}
		if recomputed > prevRecomputed {
			t.Errorf("a larger budget recomputes more layers (%d > %d)", recomputed, prevRecomputed)
		}
		prevRecomputed = recomputed
	}
}

func TestBudgetGradientsEqualPlain(t *testing.T) {
	dev := cpu.New(0, device.Options{})
	for i := range 2 { // the measuring step, then a planned one
		plain := newModel(dev, dtype.F64, 6, 6, false)
		bud := newModel(dev, dtype.F64, 6, 6, false)
		_, g1, p := step(t, dev, plain, 0, dtype.F64, dtype.Invalid)
		b := checkpoint.NewBudget(p / 2)
		if i == 1 { // measure on a throwaway model with the same shapes
			other := newModel(dev, dtype.F64, 6, 6, false)
			stepWith(t, dev, other, dtype.F64, dtype.Invalid, func(x *autograd.Tensor) *autograd.Tensor { return b.Forward(other.layers, x) })
			other.release()
		}
		_, g2, _ := stepWith(t, dev, bud, dtype.F64, dtype.Invalid, func(x *autograd.Tensor) *autograd.Tensor { return b.Forward(bud.layers, x) })
		if starts, _, _ := b.Plan(); i == 1 && len(starts) < 2 {
			t.Errorf("half the plain peak should need several segments, plan %v", starts)
		}
		for k := range g1 {
			for j := range g1[k] {
				if g1[k][j] != g2[k][j] {
					t.Fatalf("step %d: param %d[%d] = %v, plain %v", i, k, j, g2[k][j], g1[k][j])
				}
			}
		}
		plain.release()
		bud.release()
	}
}
