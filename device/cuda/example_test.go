package cuda_test

import (
	"errors"
	"fmt"

	"github.com/headroom-ml/headroom/device"
	"github.com/headroom-ml/headroom/device/cpu"
	"github.com/headroom-ml/headroom/device/cuda"
)

// Open a GPU when there is one and fall back to the cpu when there is no
// driver or device; the output is the same either way.
func Example() {
	dev, err := cuda.Open(0, device.Options{})
	if errors.Is(err, cuda.ErrNoDriver) || errors.Is(err, cuda.ErrNoDevice) {
		dev, err = cpu.New(0, device.Options{}), nil // "no CUDA": run on the cpu
	}
	if err != nil {
		fmt.Println(err) // a driver without NVRTC or cuBLAS, say
		return
	}
	defer dev.Close()
	b, err := dev.Alloc(1<<20, device.Label{Tag: device.Activation, Op: "example"})
	if err != nil {
		fmt.Println(err)
		return
	}
	b.Release()
	fmt.Println("allocated and released 1 MiB")
	// Output: allocated and released 1 MiB
}
