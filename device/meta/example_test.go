package meta_test

import (
	"fmt"

	"github.com/headroom-ml/headroom/autograd"
	"github.com/headroom-ml/headroom/device"
	"github.com/headroom-ml/headroom/device/cpu"
	"github.com/headroom-ml/headroom/device/meta"
	"github.com/headroom-ml/headroom/dtype"
	"github.com/headroom-ml/headroom/nn"
)

// A meta device holds no data, yet it accounts exactly as a cpu device
// does: the same forward and backward of a Linear layer reach the same
// peak, byte for byte, on both.
func ExampleNew() {
	var peaks []int64
	for _, dev := range []*device.Device{
		cpu.New(0, device.Options{}),
		meta.New(0, device.Options{}),
	} {
		fc := nn.NewLinear(nn.NewBuilder(dev, dtype.F32, 1), "fc", 256, 128, true)
		s := autograd.NewScope()
		x := s.Full(dev, dtype.F32, 0.5, 32, 256)
		loss := fc.Forward(x).ReLU().Sum(false)
		if err := loss.Backward(); err != nil {
			panic(err)
		}
		st := dev.Stats()
		fmt.Printf("%-4s holds data: %-5v peak %d bytes (parameter %d, gradient %d)\n",
			dev.Kind(), fc.Weight.Block().Bytes() != nil, dev.PeakBytes(),
			st.Tag(device.Parameter).Current, st.Tag(device.Gradient).Current)
		peaks = append(peaks, dev.PeakBytes())
		s.Release()
		nn.Release(fc)
		fmt.Printf("%-4s after release: %d bytes\n", dev.Kind(), dev.CurrentBytes())
	}
	fmt.Println("equal peaks:", peaks[0] == peaks[1])
	// Output:
	// cpu  holds data: true  peak 345092 bytes (parameter 131584, gradient 131584)
	// cpu  after release: 0 bytes
	// meta holds data: false peak 345092 bytes (parameter 131584, gradient 131584)
	// meta after release: 0 bytes
	// equal peaks: true
}
