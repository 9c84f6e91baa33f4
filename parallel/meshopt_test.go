package parallel_test

import (
	"math"
	"strings"
	"testing"

	"github.com/headroom-ml/headroom/autograd"
	"github.com/headroom-ml/headroom/device"
	"github.com/headroom-ml/headroom/device/cpu"
	"github.com/headroom-ml/headroom/dtype"
	"github.com/headroom-ml/headroom/nn"
	"github.com/headroom-ml/headroom/optim"
	"github.com/headroom-ml/headroom/parallel"
)

// TestMeshOptimizerErrors: a plain optimizer over two data-parallel
// copies is refused (its gradients are not reduced), and an infinite
// gradient on one rank of four makes Step fail on every rank before any
// parameter changed.
func TestMeshOptimizerErrors(t *testing.T) {
	meshes, err := parallel.NewMeshGroup(parallel.MeshShape{Data: 2, Tensor: 2, Pipe: 1})
	if err != nil {
		t.Fatal(err)
	}
	errs := make([]error, 4)
	values := make([]float64, 4)
	_ = parallel.RunMesh(meshes, func(m *parallel.Mesh) error {
		dev := cpu.New(m.World.Rank(), device.Options{})
		p := autograd.New(dev, dtype.F64, device.Parameter, 1)
		g := autograd.New(dev, dtype.F64, device.Gradient, 1)
		p.SetFloat64s([]float64{1})
		g.SetFloat64s([]float64{1})
		if m.World.Rank() == 3 {
			g.SetFloat64s([]float64{math.Inf(1)})
		}
		p.SetGrad(g)
		opt, err := optim.NewSGD([]nn.Param{{Name: "p", T: p}}, optim.SGDConfig{LR: 1})
		if err != nil {
			return err
		}
		r := m.World.Rank()
		if _, err := parallel.NewMeshOptimizer(m, opt, nil); err == nil || !strings.Contains(err.Error(), "2 data-parallel copies with a *optim.SGD") {
			t.Errorf("rank %d: NewMeshOptimizer over 2 copies with SGD: %v, want a refusal", r, err)
		}
		m.Shape.Data = 1 // as if each copy were alone: Step must still agree
		mo, err := parallel.NewMeshOptimizer(m, opt, nil)
		if err != nil {
			return err
		}
		errs[r] = mo.Step()
		values[r] = p.Float64s()[0]
		return nil
	})
	for r, err := range errs {
		if err == nil || !strings.Contains(err.Error(), "the gradient norm is +Inf") || values[r] != 1 {
			t.Errorf("rank %d: Step with an infinite gradient on rank 3: %v, parameter %v: want the norm refused and 1 kept", r, err, values[r])
		}
	}
}
