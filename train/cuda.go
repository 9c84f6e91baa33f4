package train

import (
	"github.com/headroom-ml/headroom/device"
	"github.com/headroom-ml/headroom/device/cuda"
)

// openCUDA opens cuda:index through device/cuda.
func openCUDA(index int, o device.Options) (*device.Device, error) {
	return cuda.Open(index, o)
}
