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

// Two ranks train Linear(3, 2) (8 parameters) under ZeRO stage 1: each
// holds Adam's state for its half (4 elements, 32 bytes) and both end with
// the same weights.
func Example() {
	comms := parallel.NewGroup(2)
	opt := make([]int64, 2)
	weights := make([][]float32, 2)
	err := parallel.Run(comms, func(c parallel.Communicator) error {
		dev := cpu.New(c.Rank(), device.Options{})
		model := nn.NewLinear(nn.NewBuilder(dev, dtype.F32, 1), "fc", 3, 2, true)
		defer nn.Release(model)
		d, err := parallel.NewDDP(c, model, parallel.DDPConfig{Zero: 1})
		if err != nil {
			return err
		}
		defer d.Release()
		o, err := parallel.NewAdamW(d, optim.AdamConfig{LR: 0.1})
		if err != nil {
			return err
		}
		defer o.Release()
		s := autograd.NewScope()
		x := s.FromFloat32s(dev, []int{1, 3}, []float32{1, float32(c.Rank()), -1}) // each rank's sample
		err = model.Forward(x).Sum(false).Backward()
		s.Release()
		if err != nil {
			return err
		}
		if err := o.Step(); err != nil {
			return err
		}
		o.ZeroGrad()
		opt[c.Rank()] = dev.Stats().ByTag[device.Optimizer].Current
		weights[c.Rank()] = model.Weight.Float32s()
		return nil
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("optimizer bytes per rank:", opt)
	fmt.Println("same weights:", fmt.Sprint(weights[0]) == fmt.Sprint(weights[1]))
	// Output:
	// optimizer bytes per rank: [32 32]
	// same weights: true
}

// Two ranks train Linear(3, 2) under ZeRO stage 3: each keeps 4 of the 8
// parameters (16 bytes), Adam's state for them (32 bytes) and their
// gradients; the layer's weights exist whole only while it runs. Unshard
// gathers them to read them.
func Example_stage3() {
	comms := parallel.NewGroup(2)
	held := make([][3]int64, 2)
	weights := make([][]float32, 2)
	err := parallel.Run(comms, func(c parallel.Communicator) error {
		dev := cpu.New(c.Rank(), device.Options{})
		model := nn.NewLinear(nn.NewBuilder(dev, dtype.F32, 1), "fc", 3, 2, true)
		defer nn.Release(model)
		d, err := parallel.NewDDP(c, model, parallel.DDPConfig{Zero: 3})
		if err != nil {
			return err
		}
		defer d.Release()
		o, err := parallel.NewAdamW(d, optim.AdamConfig{LR: 0.1})
		if err != nil {
			return err
		}
		defer o.Release()
		s := autograd.NewScope()
		x := s.FromFloat32s(dev, []int{1, 3}, []float32{1, float32(c.Rank()), -1})
		err = model.Forward(x).Sum(false).Backward() // gathers the weights, then frees them
		s.Release()
		if err != nil {
			return err
		}
		if err := o.Step(); err != nil {
			return err
		}
		o.ZeroGrad()
		st := dev.Stats()
		held[c.Rank()] = [3]int64{st.ByTag[device.Parameter].Current, st.ByTag[device.Gradient].Current, st.ByTag[device.Optimizer].Current}
		if err := d.Unshard(); err != nil {
			return err
		}
		weights[c.Rank()] = model.Weight.Float32s()
		return nil
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("parameter, gradient, optimizer bytes per rank:", held)
	fmt.Println("same weights:", fmt.Sprint(weights[0]) == fmt.Sprint(weights[1]))
	// Output:
	// parameter, gradient, optimizer bytes per rank: [[16 16 32] [16 16 32]]
	// same weights: true
}
