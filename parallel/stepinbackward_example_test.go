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

// Two ranks step AdamW inside backward under ZeRO stage 2: each updates
// its 4096-element piece of Linear(64, 128)'s weights as the bucket's
// reduce-scatter completes, its undo copy (4·4096 bytes: no state before
// the first step) on its host, freed when the step stays. train.Stepper
// does this with StepInBackward; here by hand.
func ExampleOptimizer_InBackward() {
	hostPeak := make([]int64, 2)
	err := parallel.Run(parallel.NewGroup(2), func(c parallel.Communicator) error {
		dev, host := cpu.New(c.Rank(), device.Options{}), cpu.New(100+c.Rank(), device.Options{})
		model := nn.NewLinear(nn.NewBuilder(dev, dtype.F32, 1), "fc", 64, 128, false)
		defer nn.Release(model)
		d, err := parallel.NewDDP(c, model, parallel.DDPConfig{Zero: 2, BucketBytes: 1 << 20})
		if err != nil {
			return err
		}
		defer d.Release()
		o, err := parallel.NewAdamW(d, optim.AdamConfig{LR: 0.01})
		if err != nil {
			return err
		}
		defer o.Release()
		ib, err := o.InBackward(host, 1) // loss scale 1: no scaler
		if err != nil {
			return err
		}
		s := autograd.NewScope()
		x := s.FromFloat32s(dev, []int{2, 64}, make([]float32, 2*64))
		ib.Start()
		err = model.Forward(x).Sum(false).Backward()
		if serr := ib.Stop(); err == nil {
			err = serr
		}
		s.Release()
		if err == nil {
			err = ib.Rest().Step() // the step count, the gathers, the buffers
		}
		if err != nil {
			ib.Rollback()
			return err
		}
		ib.Release()
		o.ZeroGrad()
		hostPeak[c.Rank()] = host.Stats().ByTag[device.Optimizer].Peak
		return nil
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("undo bytes per rank at the peak:", hostPeak)
	// Output:
	// undo bytes per rank at the peak: [16384 16384]
}
