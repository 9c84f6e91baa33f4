package parallel_test

import (
	"fmt"

	"github.com/headroom-ml/headroom/autograd"
	"github.com/headroom-ml/headroom/device"
	"github.com/headroom-ml/headroom/device/cpu"
	"github.com/headroom-ml/headroom/dtype"
	"github.com/headroom-ml/headroom/nn"
	"github.com/headroom-ml/headroom/optim"
	"github.com/headroom-ml/headroom/parallel"
)

// Two tensor-parallel ranks each hold one element of a split weight
// (gradients 3 and 4) and a replicated bias (gradient 12 on both): the
// whole model's gradient norm is √(3² + 4² + 12²) = 13, the bias counted
// once, and both ranks clip by it.
func ExampleMeshOptimizer() {
	meshes, err := parallel.NewMeshGroup(parallel.MeshShape{Data: 1, Tensor: 2, Pipe: 1})
	if err != nil {
		fmt.Println(err)
		return
	}
	norms, grads := make([]float64, 2), make([]float64, 2)
	err = parallel.RunMesh(meshes, func(m *parallel.Mesh) error {
		dev := cpu.New(m.World.Rank(), device.Options{})
		param := func(g float64) *autograd.Tensor {
			t := autograd.New(dev, dtype.F64, device.Parameter, 1)
			gt := autograd.New(dev, dtype.F64, device.Gradient, 1)
			gt.SetFloat64s([]float64{g})
			t.SetGrad(gt)
			return t
		}
		shard, bias := param(float64(3+m.TensorRank)), param(12)
		opt, err := optim.NewSGD([]nn.Param{{Name: "w", T: shard}, {Name: "b", T: bias}}, optim.SGDConfig{LR: 1})
		if err != nil {
			return err
		}
		mo, err := parallel.NewMeshOptimizer(m, opt, []*autograd.Tensor{bias})
		if err != nil {
			return err
		}
		mo.Clip = 1
		if err := mo.Step(); err != nil {
			return err
		}
		norms[m.TensorRank], grads[m.TensorRank] = mo.Norm(), shard.Grad().Float64s()[0]
		return nil
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("norm on each rank:", norms)
	fmt.Printf("clipped shard gradients: %.4f %.4f\n", grads[0], grads[1])
	// Output:
	// norm on each rank: [13 13]
	// clipped shard gradients: 0.2308 0.3077
}
