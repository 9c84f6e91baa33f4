package autograd_test

import (
	"fmt"

	"github.com/headroom-ml/headroom/autograd"
	"github.com/headroom-ml/headroom/device"
	"github.com/headroom-ml/headroom/device/cpu"
	"github.com/headroom-ml/headroom/device/meta"
	"github.com/headroom-ml/headroom/dtype"
)

// The gradient of Σ w·x with respect to w is x; the memory the step used
// is gone when its scope is released.
func Example() {
	dev := cpu.New(0, device.Options{})
	w := autograd.Param(dev, dtype.F32, "w", 3)
	w.SetFloat32s([]float32{1, 2, 3})

	s := autograd.NewScope()
	x := s.FromFloat32s(dev, []int{3}, []float32{4, 5, 6})
	loss := s.Use(w).Mul(x).Sum(false)
	if err := loss.Backward(); err != nil {
		panic(err)
	}
	fmt.Println("loss:", loss.Item())
	fmt.Println("grad:", w.Grad().Float32s())
	s.Release()

	fmt.Println("live:", dev.Live())
	w.Release()
	fmt.Println("after release:", dev.CurrentBytes(), "bytes")
	// Output:
	// loss: 32
	// grad: [4 5 6]
	// live: [{parameter w/param 12 1} {gradient w/grad 12 1}]
	// after release: 0 bytes
}

// A meta device runs the same code and allocates the same bytes without
// computing anything.
func Example_meta() {
	for _, dev := range []*device.Device{cpu.New(0, device.Options{}), metaDevice()} {
		s := autograd.NewScope()
		a := s.Zeros(dev, dtype.F32, 1024, 256)
		b := s.Zeros(dev, dtype.F32, 256, 512)
		c := a.MatMul(b)
		fmt.Printf("%s: %v, peak %d bytes\n", dev.Kind(), c.Shape(), dev.PeakBytes())
		s.Release()
	}
	// Output:
	// cpu: [1024 512], peak 3670016 bytes
	// meta: [1024 512], peak 3670016 bytes
}

func metaDevice() *device.Device { return meta.New(0, device.Options{}) }
