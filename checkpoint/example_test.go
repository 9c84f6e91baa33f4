package checkpoint_test

import (
	"fmt"
	"math"
	"slices"

	"github.com/headroom-ml/headroom/autograd"
	"github.com/headroom-ml/headroom/checkpoint"
	"github.com/headroom-ml/headroom/device"
	"github.com/headroom-ml/headroom/device/cpu"
	"github.com/headroom-ml/headroom/dtype"
	"github.com/headroom-ml/headroom/nn"
)

// mlp builds n blocks of the given width, each a Linear and a ReLU.
func mlp(dev *device.Device, n, width int) []nn.Layer {
	b := nn.NewBuilder(dev, dtype.F32, 1)
	var blocks []nn.Layer
	for i := range n {
		fc := nn.NewLinear(b, fmt.Sprintf("block%d.fc", i), width, width, true)
		blocks = append(blocks, nn.NewSequential(fc, nn.ReLU("relu")))
	}
	return blocks
}

// trainStep runs one forward and backward of a batch of 32 through fwd and
// returns the activation peak and the gradients, which it then frees.
func trainStep(dev *device.Device, m nn.Module, width int, fwd func(*autograd.Tensor) *autograd.Tensor) (int64, [][]float32) {
	x := make([]float32, 32*width)
	for i := range x {
		x[i] = float32(math.Sin(float64(i)))
	}
	s := autograd.NewScope()
	defer s.Release()
	dev.ResetPeak()
	loss := fwd(s.FromFloat32s(dev, []int{32, width}, x)).Pow(2).Mean(false)
	if err := loss.Backward(); err != nil {
		panic(err)
	}
	peak := dev.Stats().Tag(device.Activation).Peak
	var grads [][]float32
	for _, p := range nn.Trainable(m) {
		grads = append(grads, p.T.Grad().Float32s())
	}
	nn.ZeroGrad(m)
	return peak, grads
}

// Checkpoint a 16-block MLP in ⌈√16⌉ = 4 segments: the activation peak
// falls, and the gradients are bit for bit those of the plain step.
func ExampleSequential() {
	dev := cpu.New(0, device.Options{})
	const width = 64
	layers := mlp(dev, 16, width)
	m := nn.NewSequential(layers...)
	defer nn.Release(m)

	plainPeak, plainGrads := trainStep(dev, m, width, m.Forward)
	ckptPeak, ckptGrads := trainStep(dev, m, width, func(x *autograd.Tensor) *autograd.Tensor {
		return checkpoint.Sequential(layers, 0, x) // 0: ⌈√n⌉ segments
	})
	fmt.Println("plain activation peak:       ", plainPeak, "bytes")
	fmt.Println("checkpointed activation peak:", ckptPeak, "bytes")
	fmt.Println("gradients equal:", slices.EqualFunc(plainGrads, ckptGrads, slices.Equal[[]float32]))
	// Output:
	// plain activation peak:        147460 bytes
	// checkpointed activation peak: 81924 bytes
	// gradients equal: true
}

// A Budget measures the layers on its first step, then plans segments that
// keep the activations under the budget.
func ExampleBudget() {
	dev := cpu.New(0, device.Options{})
	const width = 64
	layers := mlp(dev, 16, width)
	m := nn.NewSequential(layers...)
	defer nn.Release(m)

	b := checkpoint.NewBudget(96 << 10) // 96 KiB
	fwd := func(x *autograd.Tensor) *autograd.Tensor { return b.Forward(layers, x) }
	first, _ := trainStep(dev, m, width, fwd) // measures every layer
	peak, _ := trainStep(dev, m, width, fwd)  // runs the plan
	starts, estimate, fits := b.Plan()
	fmt.Println("measuring step activation peak:", first, "bytes")
	fmt.Println("segments start at", starts, "estimate", estimate, "bytes, fits", fits)
	fmt.Println("planned step activation peak:", peak, "bytes")
	// Output:
	// measuring step activation peak: 163844 bytes
	// segments start at [0 4 8 12] estimate 98304 bytes, fits true
	// planned step activation peak: 81924 bytes
}

// Offload the saved activations of a 16-block MLP to a host device: the
// device's activation peak falls, the host held what moved, and the
// gradients are bit for bit those of the plain step. The last offloaded
// block's output is saved by the resident last block too, so it stays on
// the device and is not fetched back.
func ExampleOffload() {
	dev := cpu.New(0, device.Options{})
	host := cpu.New(100, device.Options{})
	const width = 64
	layers := mlp(dev, 16, width)
	m := nn.NewSequential(layers...)
	defer nn.Release(m)

	plainPeak, plainGrads := trainStep(dev, m, width, m.Forward)
	o := &checkpoint.Offload{Host: host} // Window 0: DefaultWindow layers ahead
	offPeak, offGrads := trainStep(dev, m, width, func(x *autograd.Tensor) *autograd.Tensor {
		return o.Forward(layers, x)
	})
	st := o.Stats()
	fmt.Println("plain activation peak:    ", plainPeak, "bytes")
	fmt.Println("offloaded activation peak:", offPeak, "bytes")
	fmt.Println("moved to the host:", st.Offloaded, "bytes, fetched back:", st.Fetched, "bytes")
	fmt.Println("host activation peak:", host.Stats().Tag(device.Activation).Peak, "bytes")
	fmt.Println("gradients equal:", slices.EqualFunc(plainGrads, offGrads, slices.Equal[[]float32]))
	// Output:
	// plain activation peak:     147460 bytes
	// offloaded activation peak: 57348 bytes
	// moved to the host: 122880 bytes, fetched back: 114688 bytes
	// host activation peak: 122880 bytes
	// gradients equal: true
}
