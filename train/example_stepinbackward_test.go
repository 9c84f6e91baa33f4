package train_test

import (
	"fmt"

	"github.com/headroom-ml/headroom/autograd"
	"github.com/headroom-ml/headroom/device"
	"github.com/headroom-ml/headroom/device/cpu"
	"github.com/headroom-ml/headroom/dtype"
	"github.com/headroom-ml/headroom/nn"
	"github.com/headroom-ml/headroom/optim"
	"github.com/headroom-ml/headroom/train"
)

// The optimizer step inside backward: each parameter is updated as soon
// as its gradient is complete and the gradient freed at once, so the
// gradient peak is the largest single gradient (fc1.weight, 64·32·4
// bytes) instead of all of them. Until the step ends each update keeps a
// copy of the parameter and its AdamW state on the host device, so that a
// skipped or failed step is undone bit for bit.
func ExampleStepper_stepInBackward() {
	dev := cpu.New(0, device.Options{})
	b := nn.NewBuilder(dev, dtype.F32, 1)
	m := nn.NewSequential(nn.NewLinear(b, "fc1", 32, 64, true), nn.GELU("gelu"), nn.NewLinear(b, "fc2", 64, 4, true))
	defer nn.Release(m)
	opt, err := optim.NewAdamW(m.Params(), optim.AdamConfig{LR: 1e-3})
	if err != nil {
		panic(err)
	}
	defer opt.Release()
	host := cpu.New(train.UndoHost, device.Options{}) // holds the undo copies while a step runs
	st := &train.Stepper{Opt: opt, StepInBackward: true, Host: host}
	x := make([]float64, 8*32)
	for i := range x {
		x[i] = float64(i%7) - 3
	}
	forward := func(s *autograd.Scope, _ int) *autograd.Tensor {
		return autograd.CrossEntropy(m.Forward(s.FromFloat64s(dev, []int{8, 32}, x).Cast(dtype.F32)),
			s.FromInt64s(dev, []int{8}, []int64{0, 1, 2, 3, 0, 1, 2, 3}), autograd.CEOptions{})
	}
	for range 3 {
		if _, _, err := st.Step(forward); err != nil {
			panic(err)
		}
	}
	fmt.Println("steps:", st.Steps())
	fmt.Println("gradient peak:", dev.Stats().ByTag[device.Gradient].Peak, "bytes; all gradients:", 4*nn.Count(m), "bytes")
	fmt.Println("undo copies on", host, "at the peak:", host.Stats().Requested.Peak, "bytes (12 per element); now:", host.Stats().Requested.Current)
	// Output:
	// steps: 3
	// gradient peak: 8192 bytes; all gradients: 9488 bytes
	// undo copies on cpu:100 at the peak: 28464 bytes (12 per element); now: 0
}
