package device

import "fmt"

// KernelError reports a kernel that a device could not run: a kernel
// missing from the device's sources, an op the device does not support yet,
// or a launch or execution failure reported by the driver. Kernels methods
// return nothing, so a backend raises it as a panic value at the call that
// notices it (on an accelerator that is often the call after the failing
// one, since launches are queued); autograd's Try and Scope.Run return it
// as an error, like *OOMError. Match it with errors.As, and the cause with
// errors.Is on Err.
type KernelError struct {
	// Device names the device, for example "cuda:0".
	Device string
	// Op names the kernel or call that failed, for example "gemm" or
	// "unary_f32".
	Op string
	// Err is the cause.
	Err error
}

// Error names the device, the op and the cause.
func (e *KernelError) Error() string {
	return fmt.Sprintf("device %s: %s: %v", e.Device, e.Op, e.Err)
}

// Unwrap returns the cause.
func (e *KernelError) Unwrap() error { return e.Err }

// MemInfo is implemented by backends that can say how much memory their
// hardware has free (a GPU's driver). An *OOMError's message then adds the
// driver's view to the allocator's.
type MemInfo interface {
	// MemInfo returns the bytes the driver reports free and in total.
	MemInfo() (free, total int64)
}
