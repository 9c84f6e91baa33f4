package cuda

import (
	"unsafe"
)

// Handles of driver objects, as the driver gives them.
type (
	Context  uintptr
	Stream   uintptr
	Event    uintptr
	Module   uintptr
	Function uintptr
	// DevPtr is a device address.
	DevPtr uintptr
)

// Device attributes used by the bindings (CUdevice_attribute).
const (
	AttrComputeCapabilityMajor = 75
	AttrComputeCapabilityMinor = 76
	AttrVMMSupported           = 102
)

// DeviceCount returns the number of devices.
func (d *Driver) DeviceCount() (int, error) {
	var n int32
	err := d.call("cuDeviceGetCount", d.cuDeviceGetCount, uintptr(unsafe.Pointer(&n)))
	return int(n), err
}

// Device returns the handle of device ordinal i.
func (d *Driver) Device(i int) (int, error) {
	var h int32
	err := d.call("cuDeviceGet", d.cuDeviceGet, uintptr(unsafe.Pointer(&h)), uintptr(i))
	return int(h), err
}

// DeviceName returns the device's name.
func (d *Driver) DeviceName(dev int) (string, error) {
	b := make([]byte, 256)
	if err := d.call("cuDeviceGetName", d.cuDeviceGetName, uintptr(unsafe.Pointer(&b[0])), uintptr(len(b)), uintptr(dev)); err != nil {
		return "", err
	}
	return cString(&b[0]), nil
}

// Attribute returns a device attribute.
func (d *Driver) Attribute(dev, attr int) (int, error) {
	var v int32
	err := d.call("cuDeviceGetAttribute", d.cuDeviceGetAttribute, uintptr(unsafe.Pointer(&v)), uintptr(attr), uintptr(dev))
	return int(v), err
}

// TotalMem returns the device's memory in bytes.
func (d *Driver) TotalMem(dev int) (int64, error) {
	var v uint64
	err := d.call("cuDeviceTotalMem_v2", d.cuDeviceTotalMem, uintptr(unsafe.Pointer(&v)), uintptr(dev))
	return int64(v), err
}

// RetainPrimary retains the device's primary context.
func (d *Driver) RetainPrimary(dev int) (Context, error) {
	var c Context
	err := d.call("cuDevicePrimaryCtxRetain", d.cuDevicePrimaryCtxRetain, uintptr(unsafe.Pointer(&c)), uintptr(dev))
	return c, err
}

// ReleasePrimary releases the device's primary context.
func (d *Driver) ReleasePrimary(dev int) error {
	return d.call("cuDevicePrimaryCtxRelease_v2", d.cuDevicePrimaryCtxRelease, uintptr(dev))
}

// SetCurrent makes c the calling thread's current context.
func (d *Driver) SetCurrent(c Context) error {
	return d.call("cuCtxSetCurrent", d.cuCtxSetCurrent, uintptr(c))
}

// MemInfo returns the current context's device's free and total bytes.
func (d *Driver) MemInfo() (free, total int64, err error) {
	var f, t uint64
	err = d.call("cuMemGetInfo_v2", d.cuMemGetInfo, uintptr(unsafe.Pointer(&f)), uintptr(unsafe.Pointer(&t)))
	return int64(f), int64(t), err
}

// MemAlloc allocates n bytes of device memory (no VMM).
func (d *Driver) MemAlloc(n int64) (DevPtr, error) {
	var p DevPtr
	err := d.call("cuMemAlloc_v2", d.cuMemAlloc, uintptr(unsafe.Pointer(&p)), uintptr(n))
	return p, err
}

// MemFree frees memory from MemAlloc.
func (d *Driver) MemFree(p DevPtr) error { return d.call("cuMemFree_v2", d.cuMemFree, uintptr(p)) }

// MemAllocHost allocates n bytes of page-locked host memory.
func (d *Driver) MemAllocHost(n int) ([]byte, error) {
	var p unsafe.Pointer
	if err := d.call("cuMemAllocHost_v2", d.cuMemAllocHost, uintptr(unsafe.Pointer(&p)), uintptr(n)); err != nil {
		return nil, err
	}
	return unsafe.Slice((*byte)(p), n), nil
}

// MemFreeHost frees memory from MemAllocHost.
func (d *Driver) MemFreeHost(b []byte) error {
	return d.call("cuMemFreeHost", d.cuMemFreeHost, uintptr(unsafe.Pointer(&b[0])))
}

// CopyHtoD queues a copy of n bytes from pinned host memory h to device
// address p on stream s.
func (d *Driver) CopyHtoD(p DevPtr, h []byte, s Stream) error {
	return d.call("cuMemcpyHtoDAsync_v2", d.cuMemcpyHtoDAsync, uintptr(p), uintptr(unsafe.Pointer(&h[0])), uintptr(len(h)), uintptr(s))
}

// CopyDtoH queues a copy of len(h) bytes from device address p into pinned
// host memory h on stream s.
func (d *Driver) CopyDtoH(h []byte, p DevPtr, s Stream) error {
	return d.call("cuMemcpyDtoHAsync_v2", d.cuMemcpyDtoHAsync, uintptr(unsafe.Pointer(&h[0])), uintptr(p), uintptr(len(h)), uintptr(s))
}

// CopyDtoD queues a device-to-device copy of n bytes on stream s.
func (d *Driver) CopyDtoD(dst, src DevPtr, n int64, s Stream) error {
	return d.call("cuMemcpyDtoDAsync_v2", d.cuMemcpyDtoDAsync, uintptr(dst), uintptr(src), uintptr(n), uintptr(s))
}

// MemsetD8 queues setting n bytes at p to v on stream s.
func (d *Driver) MemsetD8(p DevPtr, v byte, n int64, s Stream) error {
	return d.call("cuMemsetD8Async", d.cuMemsetD8Async, uintptr(p), uintptr(v), uintptr(n), uintptr(s))
}

// StreamCreate creates a stream (flags 0: it synchronises with the legacy
// default stream; 1: non-blocking).
func (d *Driver) StreamCreate(flags uint) (Stream, error) {
	var s Stream
	err := d.call("cuStreamCreate", d.cuStreamCreate, uintptr(unsafe.Pointer(&s)), uintptr(flags))
	return s, err
}

// StreamDestroy destroys a stream.
func (d *Driver) StreamDestroy(s Stream) error {
	return d.call("cuStreamDestroy_v2", d.cuStreamDestroy, uintptr(s))
}

// StreamSync waits for the stream's work.
func (d *Driver) StreamSync(s Stream) error {
	return d.call("cuStreamSynchronize", d.cuStreamSynchronize, uintptr(s))
}

// StreamWaitEvent makes later work on s wait for e.
func (d *Driver) StreamWaitEvent(s Stream, e Event) error {
	return d.call("cuStreamWaitEvent", d.cuStreamWaitEvent, uintptr(s), uintptr(e), 0)
}

// EventCreate creates an event (flags 2: CU_EVENT_DISABLE_TIMING).
func (d *Driver) EventCreate(flags uint) (Event, error) {
	var e Event
	err := d.call("cuEventCreate", d.cuEventCreate, uintptr(unsafe.Pointer(&e)), uintptr(flags))
	return e, err
}

// EventRecord records e on s.
func (d *Driver) EventRecord(e Event, s Stream) error {
	return d.call("cuEventRecord", d.cuEventRecord, uintptr(e), uintptr(s))
}

// EventSync waits for e.
func (d *Driver) EventSync(e Event) error {
	return d.call("cuEventSynchronize", d.cuEventSynchronize, uintptr(e))
}

// EventDestroy destroys e.
func (d *Driver) EventDestroy(e Event) error {
	return d.call("cuEventDestroy_v2", d.cuEventDestroy, uintptr(e))
}

// ModuleLoad loads a PTX image (NUL-terminated by this call).
func (d *Driver) ModuleLoad(ptx []byte) (Module, error) {
	img := make([]byte, len(ptx)+1)
	copy(img, ptx)
	var m Module
	err := d.call("cuModuleLoadData", d.cuModuleLoadData, uintptr(unsafe.Pointer(&m)), uintptr(unsafe.Pointer(&img[0])))
	return m, err
}

// ModuleFunction returns the kernel name of module m.
func (d *Driver) ModuleFunction(m Module, name string) (Function, error) {
	var f Function
	err := d.call("cuModuleGetFunction", d.cuModuleGetFunction, uintptr(unsafe.Pointer(&f)), uintptr(m), uintptr(unsafe.Pointer(cStr(name))))
	return f, err
}

// ModuleUnload unloads m.
func (d *Driver) ModuleUnload(m Module) error {
	return d.call("cuModuleUnload", d.cuModuleUnload, uintptr(m))
}

// Sync waits for all work of the current context.
func (d *Driver) Sync() error { return d.call("cuCtxSynchronize", d.cuCtxSynchronize) }
