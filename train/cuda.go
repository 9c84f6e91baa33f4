package train

import (
	"errors"

	"github.com/headroom-ml/headroom/device"
	"github.com/headroom-ml/headroom/internal/cuda"
)

// openCUDA opens cuda:index. Until device/cuda lands (issue #14) only the
// driver is loaded, so that a machine without one is told what is missing.
func openCUDA(index int, o device.Options) (*device.Device, error) {
	if _, err := cuda.LoadDriver(); err != nil {
		return nil, err
	}
	return nil, errors.New("the cuda backend (device/cuda) is not in this build yet (issue #14)")
}
