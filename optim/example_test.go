package optim_test

import (
	"fmt"

	"github.com/headroom-ml/headroom/autograd"
	"github.com/headroom-ml/headroom/device"
	"github.com/headroom-ml/headroom/device/cpu"
	"github.com/headroom-ml/headroom/dtype"
	"github.com/headroom-ml/headroom/nn"
	"github.com/headroom-ml/headroom/optim"
)

// Three Adam steps on loss = Σ w², whose gradient is 2w. Adam's first
// steps move each element by about lr, whatever the gradient's scale; the
// state is two F32 tensors of w's shape: 8 bytes per element.
func Example() {
	dev := cpu.New(0, device.Options{})
	w := autograd.Param(dev, dtype.F32, "w", 2)
	w.SetFloat32s([]float32{1, -2})
	opt, err := optim.NewAdam([]nn.Param{{Name: "w", T: w}}, optim.AdamConfig{LR: 0.1})
	if err != nil {
		panic(err)
	}
	for step := range 3 {
		s := autograd.NewScope()
		x := s.Use(w)
		loss := x.Mul(x).Sum(false)
		if err := loss.Backward(); err != nil {
			panic(err)
		}
		s.Release()
		if err := opt.Step(); err != nil {
			panic(err)
		}
		opt.ZeroGrad()
		v := w.Float32s()
		fmt.Printf("step %d: w = [%.4f %.4f]\n", step+1, v[0], v[1])
	}
	fmt.Println("optimizer bytes:", dev.Stats().ByTag[device.Optimizer].Current)
	fmt.Println("live:", dev.Live())
	opt.Release()
	w.Release()
	// Output:
	// step 1: w = [0.9000 -1.9000]
	// step 2: w = [0.8004 -1.8002]
	// step 3: w = [0.7016 -1.7006]
	// optimizer bytes: 16
	// live: [{parameter w/param 8 1} {optimizer w/exp_avg 8 1} {optimizer w/exp_avg_sq 8 1}]
}

// Clipping the global gradient norm to 1: the gradients (3, 4) have norm 5
// and are scaled by 1/5.
func ExampleClipGradNorm() {
	dev := cpu.New(0, device.Options{})
	w := autograd.Param(dev, dtype.F64, "w", 2)
	s := autograd.NewScope()
	c := s.FromFloat64s(dev, []int{2}, []float64{3, 4})
	if err := s.Use(w).Mul(c).Sum(false).Backward(); err != nil {
		panic(err)
	}
	s.Release()
	norm, err := optim.ClipGradNorm([]nn.Param{{Name: "w", T: w}}, 1)
	if err != nil {
		panic(err)
	}
	g := w.Grad().Float64s()
	fmt.Printf("norm %.1f, clipped gradient [%.4f %.4f]\n", norm, g[0], g[1])
	w.Release()
	// Output:
	// norm 5.0, clipped gradient [0.6000 0.8000]
}

// The learning rate of a warm-up over 4 steps, then a cosine decay to 0.1
// at step 8.
func ExampleCosineWarmup() {
	s := optim.CosineWarmup{Base: 1, Min: 0.1, Warmup: 4, Total: 8}
	for step := range 10 {
		fmt.Printf("%.3f ", s.LR(step))
	}
	fmt.Println()
	// Output:
	// 0.000 0.250 0.500 0.750 1.000 0.868 0.550 0.232 0.100 0.100
}
