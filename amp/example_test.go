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

// ExampleScaler runs the GradScaler loop on F16 parameters: an overflowing
// gradient skips the optimizer step and halves the scale.
func ExampleScaler() {
	dev := cpu.New(0, device.Options{})
	// F16 parameters with F32 master weights in the optimizer.
	w := autograd.Param(dev, dtype.F16, "w", 2)
	w.SetFloat64s([]float64{0.5, -1})
	opt, err := optim.NewAdam([]nn.Param{{Name: "w", T: w}}, optim.AdamConfig{LR: 0.01, MasterWeights: true})
	if err != nil {
		panic(err)
	}
	sc := amp.NewScaler(dtype.F16, amp.ScalerConfig{}) // torch.amp.GradScaler()
	fmt.Println("initial scale:", sc.Scale())

	// The loss is Σ c·w; c = 1000 makes the scaled gradient 1000·65536,
	// beyond f16's largest value (65504): it becomes +Inf.
	for i, c := range []float64{0.01, 1000, 0.01} {
		s := autograd.NewScope()
		loss := s.Use(w).Cast(dtype.F32).Scale(c).Sum(false)
		if err := sc.ScaleLoss(loss).Backward(); err != nil { // scaler.scale(loss).backward()
			panic(err)
		}
		if err := sc.Unscale(opt); err != nil { // scaler.unscale_(opt), before clipping
			panic(err)
		}
		stepped, err := sc.Step(opt) // scaler.step(opt): skipped on inf/NaN
		if err != nil {
			panic(err)
		}
		if err := sc.Update(); err != nil { // scaler.update()
			panic(err)
		}
		opt.ZeroGrad()
		s.Release()
		if stepped {
			fmt.Printf("step %d: stepped, scale %g\n", i+1, sc.Scale())
		} else {
			fmt.Printf("step %d: skipped (overflow in %q), scale %g\n", i+1, sc.LastOverflow(), sc.Scale())
		}
	}
	fmt.Println("skipped steps:", sc.Skipped())

	opt.Release() // master weights and Adam state
	w.Release()
	fmt.Println("bytes still allocated:", dev.Stats().Requested.Current)
	// Output:
	// initial scale: 65536
	// step 1: stepped, scale 65536
	// step 2: skipped (overflow in "w"), scale 32768
	// step 3: stepped, scale 32768
	// skipped steps: 1
	// bytes still allocated: 0
}

// ExampleNewScaler_bf16 shows that BF16 needs no loss scaling: the Scaler
// is a no-op, so the same loop serves F16, BF16 and F32 runs.
func ExampleNewScaler_bf16() {
	sc := amp.NewScaler(dtype.BF16, amp.ScalerConfig{})
	fmt.Println("enabled:", sc.Enabled())
	fmt.Println("scale:", sc.Scale())
	fmt.Println(sc.Note())

	dev := cpu.New(0, device.Options{})
	w := autograd.Param(dev, dtype.F32, "w", 1)
	s := autograd.NewScope()
	loss := s.Use(w).Scale(3).Sum(false)
	fmt.Println("ScaleLoss returns the loss itself:", sc.ScaleLoss(loss) == loss)
	s.Release()
	w.Release()
	// Output:
	// enabled: false
	// scale: 1
	// bf16 has fp32's exponent range: gradients do not underflow, so loss scaling is not needed and the scaler is a no-op
	// ScaleLoss returns the loss itself: true
}

// ExampleScaler_trainingLoop is the package documentation's loop: the
// forward under F16 autocast (parameters stay F32), the scaled loss's
// backward, unscaling before clipping, the step the scaler may skip, and
// the scale's update. train.Stepper runs exactly this.
func ExampleScaler_trainingLoop() {
	dev := cpu.New(0, device.Options{})
	b := nn.NewBuilder(dev, dtype.F32, 1)
	model := nn.NewLinear(b, "fc", 4, 3, true)
	opt, err := optim.NewAdamW(model.Params(), optim.AdamConfig{LR: 0.05})
	if err != nil {
		panic(err)
	}
	x := []float32{1, 0, -1, 2, 0.5, -0.5, 1, 1}
	y := []int64{0, 2}
	sc := amp.NewScaler(dtype.F16, amp.ScalerConfig{})
	for step := range 3 {
		var lossValue float64
		s := autograd.NewScope()
		err := s.Run(func() error {
			var loss *autograd.Tensor
			s.Autocast(dtype.F16, func() {
				logits := model.Forward(s.FromFloat32s(dev, []int{2, 4}, x))
				loss = autograd.CrossEntropy(logits, s.FromInt64s(dev, []int{2}, y), autograd.CEOptions{})
			})
			lossValue = loss.Item()
			return sc.ScaleLoss(loss).Backward()
		})
		if err != nil {
			panic(err) // a program returns it: errors.As(err, &oom) for *device.OOMError
		}
		if err := sc.Unscale(opt); err != nil { // before clipping
			panic(err)
		}
		if _, err := optim.ClipGradNorm(opt.Params(), 1); err != nil {
			panic(err)
		}
		stepped, err := sc.Step(opt) // skipped on inf/NaN
		if err != nil {
			panic(err)
		}
		if err := sc.Update(); err != nil {
			panic(err)
		}
		opt.ZeroGrad()
		fmt.Printf("step %d: loss %.3f, stepped %v, scale %g\n", step, lossValue, stepped, sc.Scale())
	}
	opt.Release()
	nn.Release(model)
	fmt.Println("bytes still allocated:", dev.Stats().Requested.Current)
	// Output:
	// step 0: loss 1.162, stepped true, scale 65536
	// step 1: loss 1.018, stepped true, scale 65536
	// step 2: loss 0.889, stepped true, scale 65536
	// bytes still allocated: 0
}
