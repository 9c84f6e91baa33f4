package amp_test

import (
	"fmt"

	"github.com/headroom-ml/headroom/amp"
	"github.com/headroom-ml/headroom/autograd"
	"github.com/headroom-ml/headroom/device"
	"github.com/headroom-ml/headroom/device/cpu"
	"github.com/headroom-ml/headroom/dtype"
	"github.com/headroom-ml/headroom/nn"
	"github.com/headroom-ml/headroom/optim"
)

// ExampleMainGradsF32 keeps the gradients of a BF16 layer in F32 (Megatron's
// main_grad): two micro-batches accumulate into them in F32, and AdamW's
// F32 masters are updated from them.
func ExampleMainGradsF32() {
	dev := cpu.New(0, device.Options{})
	fc := nn.NewLinear(nn.NewBuilder(dev, dtype.BF16, 1), "fc", 256, 256, false) // 65,536 BF16 weights
	n, err := amp.MainGradsF32(fc.Params())
	if err != nil {
		panic(err)
	}
	opt, err := optim.NewAdamW(fc.Params(), optim.AdamConfig{LR: 1e-3, MasterWeights: true})
	if err != nil {
		panic(err)
	}
	for range 2 { // micro-batches
		s := autograd.NewScope()
		x := s.Full(dev, dtype.BF16, 1, 4, 256)
		if err := fc.Forward(x).Cast(dtype.F32).Mean(false).Backward(); err != nil {
			panic(err)
		}
		s.Release()
	}
	w := fc.Params()[0].T
	fmt.Println("parameters with f32 gradients:", n)
	fmt.Println("weight:", w.DType(), "gradient:", w.Grad().DType())
	fmt.Println("gradient bytes:", dev.Stats().ByTag[device.Gradient].Current)
	if err := opt.Step(); err != nil {
		panic(err)
	}
	fmt.Println("optimizer bytes (f32 master, m, v):", dev.Stats().ByTag[device.Optimizer].Current)
	opt.Release()
	nn.Release(fc)
	// Output:
	// parameters with f32 gradients: 1
	// weight: bf16 gradient: f32
	// gradient bytes: 262144
	// optimizer bytes (f32 master, m, v): 786432
}
