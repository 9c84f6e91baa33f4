package cuda

import (
	"fmt"

	"github.com/headroom-ml/headroom/device"
	"github.com/headroom-ml/headroom/internal/cuda"
)

// The reasons a cuda device is unavailable or an op cannot run. Match them
// with errors.Is.
var (
	// ErrNoDriver: no NVIDIA driver (libcuda), or it found no GPU.
	ErrNoDriver = cuda.ErrNoDriver
	// ErrNoNVRTC: no run-time compiler (libnvrtc) to build the kernels.
	ErrNoNVRTC = cuda.ErrNoNVRTC
	// ErrNoCublas: no libcublas/libcublasLt for GEMM.
	ErrNoCublas = cuda.ErrNoCublas
	// ErrNoDevice: the index is not a device of this machine.
	ErrNoDevice = cuda.ErrNoDevice
	// ErrUnsupported: the op is not implemented on cuda yet.
	ErrUnsupported = cuda.ErrUnsupported
	// ErrClosed: the device was closed.
	ErrClosed = fmt.Errorf("cuda device closed: %w", device.ErrClosed)
)

// raise panics with a *device.KernelError for op on g's device.
func (g *gpu) raise(op string, err error) {
	panic(&device.KernelError{Device: g.name, Op: op, Err: err})
}
