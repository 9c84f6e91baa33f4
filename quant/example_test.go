package quant_test

import (
	"fmt"
	"iter"
	"math"

	"github.com/headroom-ml/headroom/autograd"
	"github.com/headroom-ml/headroom/device"
	"github.com/headroom-ml/headroom/device/cpu"
	"github.com/headroom-ml/headroom/device/meta"
	"github.com/headroom-ml/headroom/dtype"
	"github.com/headroom-ml/headroom/nn"
	"github.com/headroom-ml/headroom/quant"
)

// A Linear layer in int8: a quarter of the weight bytes, and outputs within
// the quantization error of the F32 layer's.
func ExampleFromLinear() {
	dev := cpu.New(0, device.Options{})
	l := nn.NewLinear(nn.NewBuilder(dev, dtype.F32, 1), "fc", 256, 10, true)
	q, err := quant.FromLinear(l, 0) // 0: dynamic input scale
	if err != nil {
		panic(err)
	}
	fmt.Println("f32 weight bytes:", l.Weight.Bytes(), "int8:", q.Weight.Bytes(), "scales:", q.WeightScale.Bytes())

	s := autograd.NewScope()
	defer s.Release()
	x := make([]float32, 4*256)
	for i := range x {
		x[i] = float32(math.Sin(float64(i)))
	}
	s.NoGrad(func() {
		in := s.FromFloat32s(dev, []int{4, 256}, x)
		want, got := l.Forward(in).Float32s(), q.Forward(in).Float32s()
		worst := 0.0
		for i := range got {
			worst = max(worst, math.Abs(float64(got[i]-want[i])))
		}
		fmt.Println("outputs:", len(got), "largest error below 0.01:", worst < 0.01)
	})
	nn.Release(q)
	nn.Release(l)
	// Output:
	// f32 weight bytes: 10240 int8: 2560 scales: 40
	// outputs: 40 largest error below 0.01: true
}

// Converting a SmallResNet with static activations, calibrated on a few
// batches. On the meta device it computes nothing but allocates exactly
// what the cpu device would: the int8 model's bytes are known before any
// data is touched.
func ExampleConvertResNet() {
	dev := meta.New(0, device.Options{})
	r, err := nn.SmallResNet(nn.NewBuilder(dev, dtype.F32, 1), "resnet", nn.ResNetConfig{InChannels: 1})
	if err != nil {
		panic(err)
	}
	r.Train(false)
	var calibration iter.Seq[*autograd.Tensor] = func(yield func(*autograd.Tensor) bool) {
		for range 4 {
			s := autograd.NewScope()
			ok := yield(s.Zeros(dev, dtype.F32, 32, 1, 28, 28)) // images, normalised
			s.Release()
			if !ok {
				return
			}
		}
	}
	q, err := quant.ConvertResNet(r, quant.Config{Activations: quant.Static}, calibration)
	if err != nil {
		panic(err)
	}
	fmt.Println("f32 parameter bytes: ", nn.ParamBytes(r))
	fmt.Println("int8 parameter bytes:", nn.ParamBytes(q))
	fmt.Println("trainable elements:  ", nn.Count(q))

	s := autograd.NewScope()
	s.NoGrad(func() {
		fmt.Println("logits:", q.Forward(s.Zeros(dev, dtype.F32, 64, 1, 28, 28)).Shape())
	})
	err = autograd.Try(func() { q.Forward(s.Zeros(dev, dtype.F32, 1, 1, 28, 28)) })
	fmt.Println(err != nil)
	s.Release()
	nn.Release(q)
	nn.Release(r)
	// Output:
	// f32 parameter bytes:  313704
	// int8 parameter bytes: 79880
	// trainable elements:   0
	// logits: [64 10]
	// true
}
