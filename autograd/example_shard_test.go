package autograd_test

import (
	"fmt"

	"github.com/headroom-ml/headroom/autograd"
	"github.com/headroom-ml/headroom/device"
	"github.com/headroom-ml/headroom/device/cpu"
	"github.com/headroom-ml/headroom/dtype"
)

// A parameter whose storage comes and goes (ZeRO stage 3 does this with a
// gathered bucket): Unbind frees it, the fetch function binds the leaf to
// a buffer again when an op uses it, and the gradient still reaches the
// same leaf.
func ExampleTensor_Unbind() {
	dev := cpu.New(0, device.Options{})
	w := autograd.Param(dev, dtype.F32, "w", 2)
	defer w.Release()
	w.Unbind()
	fmt.Println("parameter bytes after Unbind:", dev.Stats().ByTag[device.Parameter].Current)
	w.SetFetch(func(leaf *autograd.Tensor) {
		buf := autograd.New(dev, dtype.F32, device.Communication, 2)
		buf.SetFloat32s([]float32{3, 4})
		leaf.Bind(buf) // no copy: the leaf holds its own reference
		buf.Release()
	})
	s := autograd.NewScope()
	y := s.Use(w).Mul(s.Use(w)).Sum(false) // fetched on first use
	if err := y.Backward(); err != nil {
		fmt.Println(err)
	}
	s.Release()
	fmt.Println("w:", w.Float32s(), "grad:", w.Grad().Float32s())
	// Output:
	// parameter bytes after Unbind: 0
	// w: [3 4] grad: [6 8]
}
