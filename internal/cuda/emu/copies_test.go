package emu

import (
	"strings"
	"testing"
	"unsafe"
)

func TestCopiesAndSets(t *testing.T) {
	d := setup(t)
	const n = 64
	a, b := alloc[uint32](t, d, n), alloc[uint32](t, d, n)
	var s uintptr
	check(t, "cuStreamCreate", d.StreamCreate(&s, 0))
	check(t, "cuMemsetD32Async", d.MemsetD32Async(a, 0xdeadbeef, n, s))
	check(t, "cuMemsetD8Async", d.MemsetD8Async(a+8, 0x11, 8, s))
	check(t, "cuMemcpyDtoDAsync_v2", d.DtoDAsync(b, a, n*4, s))
	var pinned unsafe.Pointer
	check(t, "cuMemAllocHost_v2", d.MemAllocHost(&pinned, n*4))
	check(t, "cuMemcpyDtoHAsync_v2", d.DtoHAsync(pinned, b, n*4, s))
	check(t, "cuStreamDestroy_v2", d.StreamDestroy(s)) // its queued work still completes
	got := unsafe.Slice((*uint32)(pinned), n)
	for i, v := range got {
		want := uint32(0xdeadbeef)
		if i == 2 || i == 3 {
			want = 0x11111111
		}
		if v != want {
			t.Fatalf("after memsets and copies word %d = %#x, want %#x", i, v, want)
		}
	}
	check(t, "cuMemFreeHost", d.MemFreeHost(pinned))
	if r := d.MemsetD32Async(a+2, 0, 1, 0); r != errInvalidValue {
		t.Errorf("cuMemsetD32Async at a misaligned address = %d, want %d", r, errInvalidValue)
	}
	if r := d.DtoDAsync(b, a, n*4+1, 0); r != errInvalidValue {
		t.Errorf("cuMemcpyDtoDAsync_v2 past the allocation = %d, want %d", r, errInvalidValue)
	}
	if r := d.StreamSynchronize(s); r != 400 {
		t.Errorf("cuStreamSynchronize of a destroyed stream = %d, want 400 (CUDA_ERROR_INVALID_HANDLE)", r)
	}
}

func TestDeviceQueries(t *testing.T) {
	d := setup(t)
	name := make([]byte, 64)
	check(t, "cuDeviceGetName", d.DeviceGetName(&name[0], int32(len(name)), 0))
	if got := goString(&name[0]); got != "headroom emulator" {
		t.Errorf("cuDeviceGetName = %q, want %q", got, "headroom emulator")
	}
	for _, c := range []struct{ attr, want int32 }{{75, 9}, {76, 0}, {1, 1024}, {10, 32}, {97, 232448}} {
		var v int32
		check(t, "cuDeviceGetAttribute", d.DeviceGetAttr(&v, c.attr, 0))
		if v != c.want {
			t.Errorf("cuDeviceGetAttribute(%d) = %d, want %d", c.attr, v, c.want)
		}
	}
	var v int32
	msg := captureStderr(t, func() { v = d.DeviceGetAttr(&v, 9999, 0) })
	if v != errInvalidValue || !strings.Contains(msg, "attribute 9999 is not emulated") {
		t.Errorf("cuDeviceGetAttribute(9999) = %d, stderr %q; want %d and a message", v, msg, errInvalidValue)
	}
	var dev int32
	if r := d.DeviceGet(&dev, 1); r != 101 {
		t.Errorf("cuDeviceGet(1) of one device = %d, want 101 (CUDA_ERROR_INVALID_DEVICE)", r)
	}
	var total uintptr
	check(t, "cuDeviceTotalMem_v2", d.DeviceTotalMem(&total, 0))
	if _, want := freeBytes(t, d); total != want {
		t.Errorf("cuDeviceTotalMem_v2 = %d, want cuMemGetInfo's total %d", total, want)
	}
	check(t, "cuDriverGetVersion", d.DriverGetVersion(&v))
	if v < 12000 {
		t.Errorf("cuDriverGetVersion = %d, want a CUDA 12 driver", v)
	}
	var p *byte
	check(t, "cuGetErrorString", d.GetErrorString(errLaunchFailed, &p))
	if got := goString(p); got != "unspecified launch failure" {
		t.Errorf("cuGetErrorString(719) = %q", got)
	}
	if r := d.GetErrorName(12345, &p); r != errInvalidValue {
		t.Errorf("cuGetErrorName(12345) = %d, want %d", r, errInvalidValue)
	}
}

func TestModuleUnload(t *testing.T) {
	d := setup(t)
	var m uintptr
	p := append(append([]byte{}, ptx...), 0)
	check(t, "cuModuleLoadData", d.ModuleLoadData(&m, &p[0]))
	var f uintptr
	check(t, "cuModuleGetFunction", d.ModuleGetFunction(&f, m, "fill_f64"))
	dst := alloc[float64](t, d, 4)
	check(t, "cuLaunchKernel", launch(d, f, dim(1, 1, 1), dim(4, 1, 1), 0, 0, dst, int64(4), 6.0))
	check(t, "cuModuleUnload", d.ModuleUnload(m))
	if r := launch(d, f, dim(1, 1, 1), dim(4, 1, 1), 0, 0, dst, int64(4), 7.0); r != 400 {
		t.Errorf("cuLaunchKernel of an unloaded module's function = %d, want 400 (CUDA_ERROR_INVALID_HANDLE)", r)
	}
	if got := download[float64](t, d, dst, 4); got[3] != 6 {
		t.Errorf("a launch queued before cuModuleUnload wrote %v, want 6", got[3])
	}
}

// TestPageableUploadIsStaged: an async copy from pageable memory reads it at
// the call, as the driver stages it; one from pinned memory reads it when
// the copy runs.
func TestPageableUploadIsStaged(t *testing.T) {
	d := setup(t)
	dst := alloc[uint32](t, d, 2)
	var s uintptr
	check(t, "cuStreamCreate", d.StreamCreate(&s, 0))
	pageable := []uint32{1}
	check(t, "cuMemcpyHtoDAsync_v2", d.HtoDAsync(dst, unsafe.Pointer(&pageable[0]), 4, s))
	pageable[0] = 2
	var pinned unsafe.Pointer
	check(t, "cuMemAllocHost_v2", d.MemAllocHost(&pinned, 4))
	p := unsafe.Slice((*uint32)(pinned), 1)
	p[0] = 3
	check(t, "cuMemcpyHtoDAsync_v2", d.HtoDAsync(dst+4, pinned, 4, s))
	p[0] = 4
	check(t, "cuStreamSynchronize", d.StreamSynchronize(s))
	if got := download[uint32](t, d, dst, 2); got[0] != 1 || got[1] != 4 {
		t.Errorf("device holds %v, want [1 4] (pageable read at the call, pinned when the copy ran)", got)
	}
	check(t, "cuMemFreeHost", d.MemFreeHost(pinned))
	check(t, "cuStreamDestroy_v2", d.StreamDestroy(s))
}
