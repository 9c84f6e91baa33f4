package autograd_test

import (
	"fmt"

	"github.com/headroom-ml/headroom/autograd"
	"github.com/headroom-ml/headroom/device"
	"github.com/headroom-ml/headroom/device/cpu"
	"github.com/headroom-ml/headroom/dtype"
)

// nslPrint prints values rounded to 4 decimals.
func nslPrint(label string, v []float32) {
	fmt.Print(label, ":")
	for _, x := range v {
		fmt.Printf(" %.4f", x)
	}
	fmt.Println()
}

// Softmax along the last dimension turns each row into probabilities;
// adding a constant to a row changes nothing.
func ExampleSoftmax() {
	dev := cpu.New(0, device.Options{})
	s := autograd.NewScope()
	defer s.Release()
	x := s.FromFloat32s(dev, []int{2, 3}, []float32{1, 2, 3, 1001, 1002, 1003})
	nslPrint("softmax", autograd.Softmax(x, -1).Float32s())
	nslPrint("log_softmax row 0", autograd.LogSoftmax(x, -1).Float32s()[:3])
	// Output:
	// softmax: 0.0900 0.2447 0.6652 0.0900 0.2447 0.6652
	// log_softmax row 0: -2.4076 -1.4076 -0.4076
}

// LayerNorm normalises each row to mean 0 and variance 1 before the
// affine map; it keeps two statistics per row for backward.
func ExampleLayerNorm() {
	dev := cpu.New(0, device.Options{})
	w := autograd.Param(dev, dtype.F32, "w", 4)
	w.SetFloat32s([]float32{1, 1, 2, 2})
	b := autograd.Param(dev, dtype.F32, "b", 4)
	defer w.Release()
	defer b.Release()

	s := autograd.NewScope()
	defer s.Release()
	x := s.FromFloat32s(dev, []int{2, 4}, []float32{1, 2, 3, 4, -1, -1, 1, 1})
	before := dev.Stats().ByTag[device.Activation].Current
	y := autograd.LayerNorm(x, s.Use(w), s.Use(b), 1e-5)
	nslPrint("y", y.Float32s())
	fmt.Println("new activation bytes:", dev.Stats().ByTag[device.Activation].Current-before, "= y 32 + mean, rstd 2·2·4")
	// Output:
	// y: -1.3416 -0.4472 0.8944 2.6833 -1.0000 -1.0000 2.0000 2.0000
	// new activation bytes: 48 = y 32 + mean, rstd 2·2·4
}

// BatchNorm2d in training normalises with the batch statistics and moves
// the running statistics towards them (momentum 0.1, unbiased variance);
// eval uses the running statistics.
func ExampleBatchNorm2d() {
	dev := cpu.New(0, device.Options{})
	runMean := autograd.New(dev, dtype.F32, device.Parameter, 1)
	runVar := autograd.Full(dev, dtype.F32, 1, 1)
	defer runMean.Release()
	defer runVar.Release()

	s := autograd.NewScope()
	defer s.Release()
	x := s.FromFloat32s(dev, []int{4, 1, 1, 1}, []float32{1, 2, 3, 6})
	nslPrint("train", autograd.BatchNorm2d(x, nil, nil, runMean, runVar, true, 0.1, 0).Float32s())
	nslPrint("running mean", runMean.Float32s())
	nslPrint("running var", runVar.Float32s())
	nslPrint("eval", autograd.BatchNorm2d(x, nil, nil, runMean, runVar, false, 0.1, 0).Float32s())
	// Output:
	// train: -1.0690 -0.5345 0.0000 1.6036
	// running mean: 0.3000
	// running var: 1.3667
	// eval: 0.5988 1.4542 2.3096 4.8758
}

// CrossEntropy takes logits and class indices; an ignored target (here
// -100, PyTorch's padding convention) neither adds to the loss nor counts
// in the mean.
func ExampleCrossEntropy() {
	dev := cpu.New(0, device.Options{})
	s := autograd.NewScope()
	defer s.Release()
	logits := s.FromFloat32s(dev, []int{3, 3}, []float32{2, 0, 0, 0, 3, 0, 5, 5, 5})
	logits.SetRequiresGrad(true)
	target := s.FromInt64s(dev, []int{3}, []int64{0, 1, -100})
	loss := autograd.CrossEntropy(logits, target, autograd.CEOptions{Ignore: true, IgnoreIndex: -100})
	if err := loss.Backward(); err != nil {
		panic(err)
	}
	fmt.Printf("loss: %.4f\n", loss.Item())
	nslPrint("dlogits row 0", logits.Grad().Float32s()[:3])
	nslPrint("dlogits row 2", logits.Grad().Float32s()[6:])
	// Output:
	// loss: 0.1672
	// dlogits row 0: -0.1065 0.0533 0.0533
	// dlogits row 2: 0.0000 0.0000 0.0000
}

// MSELoss is the mean of squared differences.
func ExampleMSELoss() {
	dev := cpu.New(0, device.Options{})
	s := autograd.NewScope()
	defer s.Release()
	x := s.FromFloat32s(dev, []int{3}, []float32{1, 2, 3})
	y := s.FromFloat32s(dev, []int{3}, []float32{1, 0, 0})
	fmt.Printf("%.4f\n", autograd.MSELoss(x, y).Item())
	// Output:
	// 4.3333
}
