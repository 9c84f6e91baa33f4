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

// Two ranks train Linear(64, 128) without bias (8192 weights, one bucket)
// under ZeRO stage 1 with the 8-bit AdamW: each quantises its 4096-element
// piece in blocks of 1024, 2·4096 bytes of codes and 8·4 of absmax.
func ExampleNewAdamW8bit() {
	opt := make([]int64, 2)
	err := parallel.Run(parallel.NewGroup(2), func(c parallel.Communicator) error {
		dev := cpu.New(c.Rank(), device.Options{})
		model := nn.NewLinear(nn.NewBuilder(dev, dtype.F32, 1), "fc", 64, 128, false)
		defer nn.Release(model)
		d, err := parallel.NewDDP(c, model, parallel.DDPConfig{Zero: 1, BucketBytes: 1 << 20})
		if err != nil {
			return err
		}
		defer d.Release()
		o, err := parallel.NewAdamW8bit(d, optim.AdamConfig{LR: 0.01}, optim.Quant8Config{Block: 1024})
		if err != nil {
			return err
		}
		defer o.Release()
		s := autograd.NewScope()
		ones := make([]float32, 2*64)
		for i := range ones {
			ones[i] = 1
		}
		x := s.FromFloat32s(dev, []int{2, 64}, ones)
		err = model.Forward(x).Sum(false).Backward()
		s.Release()
		if err != nil {
			return err
		}
		if err := o.Step(); err != nil {
			return err
		}
		opt[c.Rank()] = dev.Stats().ByTag[device.Optimizer].Current
		return nil
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("optimizer bytes per rank:", opt)
	// Output:
	// optimizer bytes per rank: [8224 8224]
}
