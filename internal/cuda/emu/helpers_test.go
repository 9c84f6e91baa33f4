package emu

import (
	"runtime"
	"testing"
	"unsafe"
)

// module loads the test kernels' PTX and returns the named functions.
func module(t testing.TB, d *drv, names ...string) []uintptr {
	t.Helper()
	var m uintptr
	p := append(append([]byte{}, ptx...), 0)
	check(t, "cuModuleLoadData", d.ModuleLoadData(&m, &p[0]))
	fs := make([]uintptr, len(names))
	for i, n := range names {
		check(t, "cuModuleGetFunction "+n, d.ModuleGetFunction(&fs[i], m, n))
	}
	return fs
}

// launch queues f with the given arguments (uintptr, int32, int64, float32,
// float64 values), returning cuLaunchKernel's result.
func launch(d *drv, f uintptr, grid, block [3]uint32, smem uint32, stream uintptr, args ...any) int32 {
	var pin runtime.Pinner
	defer pin.Unpin()
	params := make([]unsafe.Pointer, len(args)+1)
	for i, a := range args {
		var p unsafe.Pointer
		switch v := a.(type) {
		case uintptr:
			p = unsafe.Pointer(&v)
		case int32:
			p = unsafe.Pointer(&v)
		case int64:
			p = unsafe.Pointer(&v)
		case float32:
			p = unsafe.Pointer(&v)
		case float64:
			p = unsafe.Pointer(&v)
		default:
			panic("launch: unsupported argument type")
		}
		pin.Pin(p)
		params[i] = p
	}
	pin.Pin(&params[0])
	return d.LaunchKernel(f, grid[0], grid[1], grid[2], block[0], block[1], block[2], smem, stream, unsafe.Pointer(&params[0]), 0)
}

// alloc is device memory for n values of T, freed at the end of the test.
func alloc[T any](t testing.TB, d *drv, n int) uintptr {
	t.Helper()
	var p uintptr
	var z T
	check(t, "cuMemAlloc_v2", d.MemAlloc(&p, uintptr(n)*unsafe.Sizeof(z)))
	t.Cleanup(func() { d.MemFree(p) })
	return p
}

func upload[T any](t testing.TB, d *drv, dst uintptr, src []T) {
	t.Helper()
	var z T
	check(t, "cuMemcpyHtoD_v2", d.HtoD(dst, unsafe.Pointer(&src[0]), uintptr(len(src))*unsafe.Sizeof(z)))
}

func download[T any](t testing.TB, d *drv, src uintptr, n int) []T {
	t.Helper()
	out := make([]T, n)
	var z T
	check(t, "cuMemcpyDtoH_v2", d.DtoH(unsafe.Pointer(&out[0]), src, uintptr(n)*unsafe.Sizeof(z)))
	return out
}

func dim(x, y, z uint32) [3]uint32 { return [3]uint32{x, y, z} }
