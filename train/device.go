package train

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/headroom-ml/headroom/device"
	"github.com/headroom-ml/headroom/device/cpu"
)

// DeviceError is a device that a program was asked for and cannot open:
// no driver, no such device, a library missing. ExitCode maps it to
// ExitUnavailable.
type DeviceError struct {
	// Name is the --device value, for example "cuda:1".
	Name string
	// Err is why it cannot be opened (from the backend's Open).
	Err error
}

func (e *DeviceError) Error() string {
	return fmt.Sprintf("--device %s: %v; use --device cpu", e.Name, e.Err)
}

// Unwrap returns the backend's error (errors.Is(err, cuda.ErrNoDriver)…).
func (e *DeviceError) Unwrap() error { return e.Err }

// ParseDevice splits a --device value into its kind and index: "cpu" (index
// 0), "cuda" (index 0) or "cuda:N" with N ≥ 0. Anything else is a
// *UsageError.
func ParseDevice(name string) (kind string, index int, err error) {
	kind, num, indexed := strings.Cut(name, ":")
	switch {
	case kind == "cpu" && !indexed:
		return kind, 0, nil
	case kind == "cuda" && !indexed:
		return kind, 0, nil
	case kind == "cuda":
		n, err := strconv.Atoi(num)
		if err == nil && n >= 0 && num == strconv.Itoa(n) {
			return kind, n, nil
		}
	}
	return "", 0, Usagef("--device %s: want cpu, cuda or cuda:N (N ≥ 0)", name)
}

// OpenDevice opens the device a --device value names with the options o
// (its capacity): the cpu device cpu:0, or the CUDA device cuda:N through
// device/cuda. A name that does not parse is a *UsageError; a device that
// cannot be opened (no GPU, no driver) a *DeviceError naming what is
// missing. The caller closes the device (Close).
func OpenDevice(name string, o device.Options) (*device.Device, error) {
	kind, index, err := ParseDevice(name)
	if err != nil {
		return nil, err
	}
	if kind == "cpu" {
		return cpu.New(index, o), nil
	}
	dev, err := openCUDA(index, o)
	if err != nil {
		return nil, &DeviceError{Name: name, Err: err}
	}
	return dev, nil
}
