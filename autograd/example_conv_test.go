package autograd_test

import (
	"fmt"

	"github.com/headroom-ml/headroom/autograd"
	"github.com/headroom-ml/headroom/device"
	"github.com/headroom-ml/headroom/device/cpu"
	"github.com/headroom-ml/headroom/dtype"
)

// A 3×3 box filter with padding 1 over a 4×4 ramp, then backward to the
// weight: each weight tap's gradient is the sum of the inputs it touched.
func ExampleConv2d() {
	dev := cpu.New(0, device.Options{})
	w := autograd.Param(dev, dtype.F32, "conv.w", 1, 1, 3, 3) // (K, C, R, S)
	w.Fill(1)
	defer w.Release()

	s := autograd.NewScope()
	defer s.Release()
	x := s.FromFloat32s(dev, []int{1, 1, 4, 4}, []float32{ // (N, C, H, W)
		0, 1, 2, 3,
		4, 5, 6, 7,
		8, 9, 10, 11,
		12, 13, 14, 15,
	})
	y := autograd.Conv2d(x, w, nil, autograd.ConvOptions{Padding: [2]int{1, 1}})
	fmt.Println(y.Shape(), y.Float32s()[:4])

	if err := y.Sum(false).Backward(); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(w.Grad().Float32s())
	// Output:
	// [1 1 4 4] [10 18 24 18]
	// [45 66 54 84 120 96 81 114 90]
}

// Max, average and adaptive average pooling of a 4×4 ramp, and where max
// pooling sends its gradient.
func ExampleMaxPool2d() {
	dev := cpu.New(0, device.Options{})
	p := autograd.New(dev, dtype.F32, device.Parameter, 1, 1, 4, 4).SetRequiresGrad(true)
	p.SetFloat32s([]float32{
		0, 1, 2, 3,
		4, 5, 6, 7,
		8, 9, 10, 11,
		12, 13, 14, 15,
	})
	defer p.Release()
	s := autograd.NewScope()
	defer s.Release()
	x := s.Use(p)

	mx := autograd.MaxPool2d(x, autograd.PoolOptions{Kernel: [2]int{2, 2}})
	avg := autograd.AvgPool2d(x, autograd.PoolOptions{Kernel: [2]int{3, 3}, Stride: [2]int{2, 2}, Padding: [2]int{1, 1}, ExcludePad: true})
	ad := autograd.AdaptiveAvgPool2d(x, 1, 3)
	fmt.Println("max", mx.Float32s())
	fmt.Println("avg", avg.Float32s())
	fmt.Println("adaptive", ad.Float32s())

	if err := mx.Sum(false).Backward(); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("grad", p.Grad().Float32s())
	// Output:
	// max [5 7 13 15]
	// avg [2.5 4 8.5 10]
	// adaptive [6.5 7.5 8.5]
	// grad [0 0 0 0 0 1 0 1 0 0 0 0 0 1 0 1]
}
