package cuda

import (
	"sync"
	"unsafe"

	"github.com/ebitengine/purego"
)

// Driver is the loaded CUDA driver API (libcuda). Its methods are thin:
// one driver call each, the result turned into an *Error. The current
// context is per OS thread: callers run every call for a device on one
// goroutine locked to its thread.
type Driver struct {
	lib *handle
	// Version is cuDriverGetVersion's value (for example 12040).
	Version int

	cuInit, cuDriverGetVersion, cuDeviceGetCount, cuDeviceGet, cuDeviceGetName uintptr
	cuDeviceGetAttribute, cuDeviceTotalMem, cuDevicePrimaryCtxRetain           uintptr
	cuDevicePrimaryCtxRelease, cuCtxSetCurrent, cuCtxSynchronize               uintptr
	cuGetErrorName, cuGetErrorString, cuMemGetInfo, cuMemAlloc, cuMemFree      uintptr
	cuMemAllocHost, cuMemFreeHost, cuMemcpyHtoDAsync, cuMemcpyDtoHAsync        uintptr
	cuMemcpyDtoDAsync, cuMemsetD8Async, cuStreamCreate, cuStreamDestroy        uintptr
	cuStreamSynchronize, cuStreamWaitEvent, cuEventCreate, cuEventRecord       uintptr
	cuEventSynchronize, cuEventDestroy, cuModuleLoadData, cuModuleGetFunction  uintptr
	cuModuleUnload, cuLaunchKernel                                             uintptr
	cuMemGetAllocationGranularity, cuMemAddressReserve, cuMemAddressFree       uintptr
	cuMemCreate, cuMemRelease, cuMemMap, cuMemUnmap, cuMemSetAccess            uintptr
	// VMM reports whether the virtual-memory calls are all present.
	VMM bool
}

var (
	driverOnce sync.Once
	driver     *Driver
	driverErr  error
)

// LoadDriver loads libcuda once per process and calls cuInit. The error is
// a *LoadError (errors.Is ErrNoDriver) when the library or a symbol is
// missing, and wraps ErrNoDriver too when cuInit fails (no GPU). An error
// is remembered: the environment is read at the first call.
func LoadDriver() (*Driver, error) {
	driverOnce.Do(func() { driver, driverErr = loadDriver() })
	return driver, driverErr
}

func loadDriver() (*Driver, error) {
	h, err := libCuda.open()
	if err != nil {
		return nil, err
	}
	d := &Driver{lib: h}
	if err := h.bind(d.required()); err != nil {
		return nil, err
	}
	d.VMM = h.bind(d.vmm()) == nil
	if err := d.call("cuInit", d.cuInit, 0); err != nil {
		return nil, &initError{err}
	}
	var v int32
	if err := d.call("cuDriverGetVersion", d.cuDriverGetVersion, uintptr(unsafe.Pointer(&v))); err != nil {
		return nil, &initError{err}
	}
	d.Version = int(v)
	return d, nil
}

// initError is a driver that loaded but did not initialise; it is
// ErrNoDriver and the call's *Error.
type initError struct{ err error }

func (e *initError) Error() string   { return "no CUDA driver: " + e.err.Error() }
func (e *initError) Unwrap() []error { return []error{ErrNoDriver, e.err} }
func (d *Driver) required() []symbol {
	return []symbol{
		{"cuInit", &d.cuInit}, {"cuDriverGetVersion", &d.cuDriverGetVersion},
		{"cuDeviceGetCount", &d.cuDeviceGetCount}, {"cuDeviceGet", &d.cuDeviceGet},
		{"cuDeviceGetName", &d.cuDeviceGetName}, {"cuDeviceGetAttribute", &d.cuDeviceGetAttribute},
		{"cuDeviceTotalMem_v2", &d.cuDeviceTotalMem}, {"cuDevicePrimaryCtxRetain", &d.cuDevicePrimaryCtxRetain},
		{"cuDevicePrimaryCtxRelease_v2", &d.cuDevicePrimaryCtxRelease}, {"cuCtxSetCurrent", &d.cuCtxSetCurrent},
		{"cuCtxSynchronize", &d.cuCtxSynchronize}, {"cuGetErrorName", &d.cuGetErrorName},
		{"cuGetErrorString", &d.cuGetErrorString}, {"cuMemGetInfo_v2", &d.cuMemGetInfo},
		{"cuMemAlloc_v2", &d.cuMemAlloc}, {"cuMemFree_v2", &d.cuMemFree},
		{"cuMemAllocHost_v2", &d.cuMemAllocHost}, {"cuMemFreeHost", &d.cuMemFreeHost},
		{"cuMemcpyHtoDAsync_v2", &d.cuMemcpyHtoDAsync}, {"cuMemcpyDtoHAsync_v2", &d.cuMemcpyDtoHAsync},
		{"cuMemcpyDtoDAsync_v2", &d.cuMemcpyDtoDAsync}, {"cuMemsetD8Async", &d.cuMemsetD8Async},
		{"cuStreamCreate", &d.cuStreamCreate}, {"cuStreamDestroy_v2", &d.cuStreamDestroy},
		{"cuStreamSynchronize", &d.cuStreamSynchronize}, {"cuStreamWaitEvent", &d.cuStreamWaitEvent},
		{"cuEventCreate", &d.cuEventCreate}, {"cuEventRecord", &d.cuEventRecord},
		{"cuEventSynchronize", &d.cuEventSynchronize}, {"cuEventDestroy_v2", &d.cuEventDestroy},
		{"cuModuleLoadData", &d.cuModuleLoadData}, {"cuModuleGetFunction", &d.cuModuleGetFunction},
		{"cuModuleUnload", &d.cuModuleUnload}, {"cuLaunchKernel", &d.cuLaunchKernel},
	}
}

func (d *Driver) vmm() []symbol {
	return []symbol{
		{"cuMemGetAllocationGranularity", &d.cuMemGetAllocationGranularity},
		{"cuMemAddressReserve", &d.cuMemAddressReserve}, {"cuMemAddressFree", &d.cuMemAddressFree},
		{"cuMemCreate", &d.cuMemCreate}, {"cuMemRelease", &d.cuMemRelease},
		{"cuMemMap", &d.cuMemMap}, {"cuMemUnmap", &d.cuMemUnmap}, {"cuMemSetAccess", &d.cuMemSetAccess},
	}
}

// call makes one driver call and turns a failing result into an *Error.
//
//go:uintptrescapes
func (d *Driver) call(name string, fn uintptr, args ...uintptr) error {
	r, _, _ := purego.SyscallN(fn, args...)
	return d.check(name, r)
}

// check turns a CUresult into an *Error (nil for CUDA_SUCCESS).
func (d *Driver) check(name string, r uintptr) error {
	code := int(int32(r))
	if code == 0 {
		return nil
	}
	e := &Error{Call: name, Code: code, Name: "CUDA_ERROR_" + itoa(code)}
	var s *byte
	if r, _, _ := purego.SyscallN(d.cuGetErrorName, uintptr(code), uintptr(unsafe.Pointer(&s))); r == 0 && s != nil {
		e.Name = cString(s)
	}
	s = nil
	if r, _, _ := purego.SyscallN(d.cuGetErrorString, uintptr(code), uintptr(unsafe.Pointer(&s))); r == 0 && s != nil {
		e.Desc = cString(s)
	}
	return e
}

// cString copies a NUL-terminated C string.
func cString(p *byte) string {
	n := 0
	for *(*byte)(unsafe.Add(unsafe.Pointer(p), n)) != 0 {
		n++
	}
	return string(unsafe.Slice(p, n))
}

func itoa(v int) string {
	if v < 0 {
		return "-" + itoa(-v)
	}
	if v < 10 {
		return string(rune('0' + v))
	}
	return itoa(v/10) + string(rune('0'+v%10))
}

// cStr returns a NUL-terminated copy of s.
func cStr(s string) *byte {
	b := make([]byte, len(s)+1)
	copy(b, s)
	return &b[0]
}
