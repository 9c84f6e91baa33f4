package train

import (
	"errors"

	"github.com/headroom-ml/headroom/device"
)

// openCUDA opens cuda:index. Until device/cuda lands (issue #14) there
// is no CUDA backend in the build.
func openCUDA(index int, o device.Options) (*device.Device, error) {
	return nil, errors.New("no CUDA: this build has no cuda backend yet (issue #14)")
}
