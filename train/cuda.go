package train

import (
	"github.com/headroom-ml/headroom/device"
	"github.com/headroom-ml/headroom/device/cpu"
	"github.com/headroom-ml/headroom/device/cuda"
)

// kernelPath names what runs dev's kernels, for the report: cuda's
// compute capability and GPU on a cuda device, else the cpu's
// instruction-set path.
func kernelPath(dev *device.Device) string {
	if p := cuda.KernelPath(dev); p != "" {
		return p
	}
	return cpu.KernelPath()
}

// openCUDA opens cuda:index through device/cuda.
func openCUDA(index int, o device.Options) (*device.Device, error) {
	return cuda.Open(index, o)
}
