package emu

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"testing"
	"unsafe"

	"github.com/ebitengine/purego"
)

// drv binds the calls of the fake driver and cuBLAS that the tests use, by
// the same run-time loading (purego) as the real libraries.
type drv struct {
	Init              func(uint32) int32                                                                                            `sym:"cuInit"`
	DeviceGetCount    func(*int32) int32                                                                                            `sym:"cuDeviceGetCount"`
	DeviceGet         func(*int32, int32) int32                                                                                     `sym:"cuDeviceGet"`
	DeviceGetName     func(*byte, int32, int32) int32                                                                               `sym:"cuDeviceGetName"`
	DeviceGetAttr     func(*int32, int32, int32) int32                                                                              `sym:"cuDeviceGetAttribute"`
	PrimaryCtxRetain  func(*uintptr, int32) int32                                                                                   `sym:"cuDevicePrimaryCtxRetain"`
	PrimaryCtxRelease func(int32) int32                                                                                             `sym:"cuDevicePrimaryCtxRelease_v2"`
	CtxSetCurrent     func(uintptr) int32                                                                                           `sym:"cuCtxSetCurrent"`
	CtxSynchronize    func() int32                                                                                                  `sym:"cuCtxSynchronize"`
	GetErrorName      func(int32, **byte) int32                                                                                     `sym:"cuGetErrorName"`
	MemGetInfo        func(*uintptr, *uintptr) int32                                                                                `sym:"cuMemGetInfo_v2"`
	MemAlloc          func(*uintptr, uintptr) int32                                                                                 `sym:"cuMemAlloc_v2"`
	MemFree           func(uintptr) int32                                                                                           `sym:"cuMemFree_v2"`
	HtoD              func(uintptr, unsafe.Pointer, uintptr) int32                                                                  `sym:"cuMemcpyHtoD_v2"`
	DtoH              func(unsafe.Pointer, uintptr, uintptr) int32                                                                  `sym:"cuMemcpyDtoH_v2"`
	HtoDAsync         func(uintptr, unsafe.Pointer, uintptr, uintptr) int32                                                         `sym:"cuMemcpyHtoDAsync_v2"`
	DtoHAsync         func(unsafe.Pointer, uintptr, uintptr, uintptr) int32                                                         `sym:"cuMemcpyDtoHAsync_v2"`
	MemsetD32Async    func(uintptr, uint32, uintptr, uintptr) int32                                                                 `sym:"cuMemsetD32Async"`
	MemsetD8Async     func(uintptr, uint8, uintptr, uintptr) int32                                                                  `sym:"cuMemsetD8Async"`
	DtoDAsync         func(uintptr, uintptr, uintptr, uintptr) int32                                                                `sym:"cuMemcpyDtoDAsync_v2"`
	MemAllocHost      func(*unsafe.Pointer, uintptr) int32                                                                          `sym:"cuMemAllocHost_v2"`
	MemFreeHost       func(unsafe.Pointer) int32                                                                                    `sym:"cuMemFreeHost"`
	GetErrorString    func(int32, **byte) int32                                                                                     `sym:"cuGetErrorString"`
	ModuleUnload      func(uintptr) int32                                                                                           `sym:"cuModuleUnload"`
	DeviceTotalMem    func(*uintptr, int32) int32                                                                                   `sym:"cuDeviceTotalMem_v2"`
	DriverGetVersion  func(*int32) int32                                                                                            `sym:"cuDriverGetVersion"`
	StreamCreate      func(*uintptr, uint32) int32                                                                                  `sym:"cuStreamCreate"`
	StreamDestroy     func(uintptr) int32                                                                                           `sym:"cuStreamDestroy_v2"`
	StreamSynchronize func(uintptr) int32                                                                                           `sym:"cuStreamSynchronize"`
	StreamWaitEvent   func(uintptr, uintptr, uint32) int32                                                                          `sym:"cuStreamWaitEvent"`
	EventCreate       func(*uintptr, uint32) int32                                                                                  `sym:"cuEventCreate"`
	EventRecord       func(uintptr, uintptr) int32                                                                                  `sym:"cuEventRecord"`
	EventQuery        func(uintptr) int32                                                                                           `sym:"cuEventQuery"`
	EventSynchronize  func(uintptr) int32                                                                                           `sym:"cuEventSynchronize"`
	ModuleLoadData    func(*uintptr, *byte) int32                                                                                   `sym:"cuModuleLoadData"`
	ModuleGetFunction func(*uintptr, uintptr, string) int32                                                                         `sym:"cuModuleGetFunction"`
	LaunchKernel      func(uintptr, uint32, uint32, uint32, uint32, uint32, uint32, uint32, uintptr, unsafe.Pointer, uintptr) int32 `sym:"cuLaunchKernel"`
	FuncSetAttribute  func(uintptr, int32, int32) int32                                                                             `sym:"cuFuncSetAttribute"`
	Granularity       func(*uintptr, unsafe.Pointer, int32) int32                                                                   `sym:"cuMemGetAllocationGranularity"`
	AddressReserve    func(*uintptr, uintptr, uintptr, uintptr, uint64) int32                                                       `sym:"cuMemAddressReserve"`
	AddressFree       func(uintptr, uintptr) int32                                                                                  `sym:"cuMemAddressFree"`
	MemCreate         func(*uint64, uintptr, unsafe.Pointer, uint64) int32                                                          `sym:"cuMemCreate"`
	MemRelease        func(uint64) int32                                                                                            `sym:"cuMemRelease"`
	MemMap            func(uintptr, uintptr, uintptr, uint64, uint64) int32                                                         `sym:"cuMemMap"`
	MemUnmap          func(uintptr, uintptr) int32                                                                                  `sym:"cuMemUnmap"`
	MemSetAccess      func(uintptr, uintptr, unsafe.Pointer, uintptr) int32                                                         `sym:"cuMemSetAccess"`

	BlasCreate         func(*uintptr) int32                                                                                                                                                                                                            `sym:"cublasCreate_v2"`
	BlasSetStream      func(uintptr, uintptr) int32                                                                                                                                                                                                    `sym:"cublasSetStream_v2"`
	BlasSetWorkspace   func(uintptr, uintptr, uintptr) int32                                                                                                                                                                                           `sym:"cublasSetWorkspace_v2"`
	BlasNoWorkspace    func() int64                                                                                                                                                                                                                    `sym:"emu_cublas_runs_without_workspace"`
	GemmEx             func(h uintptr, ta, tb, m, n, k int32, alpha unsafe.Pointer, a uintptr, at, lda int32, b uintptr, bt, ldb int32, beta unsafe.Pointer, c uintptr, ct, ldc, compute, algo int32) int32                                            `sym:"cublasGemmEx"`
	GemmStridedBatched func(h uintptr, ta, tb, m, n, k int32, alpha unsafe.Pointer, a uintptr, at, lda int32, sa int64, b uintptr, bt, ldb int32, sb int64, beta unsafe.Pointer, c uintptr, ct, ldc int32, sc int64, batch, compute, algo int32) int32 `sym:"cublasGemmStridedBatchedEx"`
}

var (
	setupOnce sync.Once
	setupErr  error
	the       drv
	theCtx    uintptr
	theLibs   Libs
	ptx       []byte // the test kernels' PTX, from NVRTC
)

// testSources are the kernel sources of testdata.
func testSources(t testing.TB) map[string][]byte {
	srcs := map[string][]byte{}
	for _, n := range []string{"kernels.cu", "common.cuh"} {
		b, err := os.ReadFile(filepath.Join("testdata", n))
		if err != nil {
			t.Fatal(err)
		}
		srcs[n] = b
	}
	return srcs
}

// setup builds the fake libraries once, binds them, initialises the driver
// and makes the primary context current on the calling thread, which it
// locks (the context is per OS thread, as on a GPU).
func setup(t testing.TB) *drv {
	t.Helper()
	setupOnce.Do(func() {
		srcs := testSources(t)
		theLibs, setupErr = Build(srcs)
		if setupErr != nil {
			return
		}
		if setupErr = bind(&the, theLibs); setupErr != nil {
			return
		}
		ptx, setupErr = compilePTX(srcs)
	})
	if setupErr != nil {
		t.Fatal(setupErr)
	}
	runtime.LockOSThread()
	t.Cleanup(runtime.UnlockOSThread)
	d := &the
	check(t, "cuInit", d.Init(0))
	if theCtx == 0 {
		check(t, "cuDevicePrimaryCtxRetain", d.PrimaryCtxRetain(&theCtx, 0))
	}
	check(t, "cuCtxSetCurrent", d.CtxSetCurrent(theCtx))
	return d
}

func bind(d *drv, libs Libs) error {
	cuda, err := purego.Dlopen(libs.Cuda, purego.RTLD_NOW|purego.RTLD_GLOBAL)
	if err != nil {
		return fmt.Errorf("dlopen %s: %w", libs.Cuda, err)
	}
	blas, err := purego.Dlopen(libs.Cublas, purego.RTLD_NOW|purego.RTLD_GLOBAL)
	if err != nil {
		return fmt.Errorf("dlopen %s: %w", libs.Cublas, err)
	}
	return bindStruct(d, func(sym string) uintptr {
		if p, err := purego.Dlsym(cuda, sym); err == nil {
			return p
		}
		p, _ := purego.Dlsym(blas, sym)
		return p
	})
}

func check(t testing.TB, call string, r int32) {
	t.Helper()
	if r != 0 {
		t.Fatalf("%s = %d (%s), want CUDA_SUCCESS", call, r, errName(r))
	}
}

func errName(r int32) string {
	var p *byte
	if the.GetErrorName == nil || the.GetErrorName(r, &p) != 0 || p == nil {
		return "?"
	}
	return goString(p)
}

func goString(p *byte) string {
	var b []byte
	for q := unsafe.Pointer(p); *(*byte)(q) != 0; q = unsafe.Add(q, 1) {
		b = append(b, *(*byte)(q))
	}
	return string(b)
}
