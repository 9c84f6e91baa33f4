package emu

import (
	"os"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"unsafe"
)

const (
	errInvalidValue = 1
	errOutOfMemory  = 2
	errInvalidImage = 200
	errNoBinary     = 209
	errNotFound     = 500
	errNotReady     = 600
	errLaunchFailed = 719
)

// captureStderr runs fn with file descriptor 2 redirected and returns what was
// written there (the fake driver reports launch failures on stderr).
func captureStderr(t *testing.T, fn func()) string {
	t.Helper()
	f, err := os.CreateTemp(t.TempDir(), "stderr")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	saved, err := syscall.Dup(2)
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Dup3(int(f.Fd()), 2, 0); err != nil {
		t.Fatal(err)
	}
	fn()
	syscall.Dup3(saved, 2, 0)
	syscall.Close(saved)
	b, _ := os.ReadFile(f.Name())
	return string(b)
}

func TestDivergentBarrierIsALaunchFailure(t *testing.T) {
	d := setup(t)
	f := module(t, d, "divergent")[0]
	out := alloc[float32](t, d, 64)
	var sync int32
	msg := captureStderr(t, func() {
		check(t, "cuLaunchKernel", launch(d, f, dim(2, 1, 1), dim(64, 1, 1), 0, 0, out, int32(7)))
		sync = d.CtxSynchronize()
	})
	t.Logf("stderr: %s", strings.TrimSpace(msg))
	if sync != errLaunchFailed {
		t.Fatalf("cuCtxSynchronize after a divergent barrier = %d (%s), want %d (CUDA_ERROR_LAUNCH_FAILED)", sync, errName(sync), errLaunchFailed)
	}
	for _, want := range []string{"kernel divergent failed", "57 of 64 threads wait at __syncthreads while 7 returned", "block (0,0,0)"} {
		if !strings.Contains(msg, want) {
			t.Errorf("stderr %q lacks %q", msg, want)
		}
	}
	var p uintptr
	if r := d.MemAlloc(&p, 16); r != errLaunchFailed {
		t.Errorf("cuMemAlloc_v2 after a launch failure = %d, want the sticky %d", r, errLaunchFailed)
	}
	// Releasing the last reference to the primary context ends the error.
	check(t, "cuDevicePrimaryCtxRelease_v2", d.PrimaryCtxRelease(0))
	check(t, "cuDevicePrimaryCtxRetain", d.PrimaryCtxRetain(&theCtx, 0))
	check(t, "cuCtxSetCurrent", d.CtxSetCurrent(theCtx))
	check(t, "cuCtxSynchronize", d.CtxSynchronize())
}

func TestWorkIsDeferredUntilASync(t *testing.T) {
	d := setup(t)
	fill := module(t, d, "fill_f64")[0]
	const n = 1000
	dst := alloc[float64](t, d, n)
	upload(t, d, dst, make([]float64, n))
	var s, s2, e, e2 uintptr
	check(t, "cuStreamCreate", d.StreamCreate(&s, 0))
	check(t, "cuStreamCreate", d.StreamCreate(&s2, 1))
	check(t, "cuEventCreate", d.EventCreate(&e, 0))
	check(t, "cuEventCreate", d.EventCreate(&e2, 0))

	host := make([]float64, n)
	host[0], host[n-1] = -1, -1
	check(t, "cuLaunchKernel", launch(d, fill, dim(2, 1, 1), dim(128, 1, 1), 0, s, dst, int64(n), 2.5))
	check(t, "cuMemcpyDtoHAsync_v2", d.DtoHAsync(unsafe.Pointer(&host[0]), dst, n*8, s))
	check(t, "cuEventRecord", d.EventRecord(e, s))
	if host[0] != -1 || host[n-1] != -1 {
		t.Fatalf("an async copy's destination changed before any sync: %v, %v", host[0], host[n-1])
	}
	if r := d.EventQuery(e); r != errNotReady {
		t.Fatalf("cuEventQuery of pending work = %d, want %d (CUDA_ERROR_NOT_READY)", r, errNotReady)
	}
	check(t, "cuEventQuery", d.EventQuery(e))
	for i, v := range host {
		if v != 2.5 {
			t.Fatalf("after the event completed host[%d] = %v, want 2.5", i, v)
		}
	}

	// s2 waits for an event of s: synchronising s2 alone runs s's work first.
	host2 := make([]float64, n)
	check(t, "cuLaunchKernel", launch(d, fill, dim(1, 1, 1), dim(64, 1, 1), 0, s, dst, int64(n), 7.0))
	check(t, "cuEventRecord", d.EventRecord(e2, s))
	check(t, "cuStreamWaitEvent", d.StreamWaitEvent(s2, e2, 0))
	check(t, "cuMemcpyDtoHAsync_v2", d.DtoHAsync(unsafe.Pointer(&host2[0]), dst, n*8, s2))
	check(t, "cuStreamSynchronize", d.StreamSynchronize(s2))
	for i, v := range host2 {
		if v != 7 {
			t.Fatalf("a copy ordered after another stream's event read host2[%d] = %v, want 7", i, v)
		}
	}
	// A synchronous copy waits for blocking streams, not for a
	// CU_STREAM_NON_BLOCKING stream (s2).
	check(t, "cuLaunchKernel", launch(d, fill, dim(1, 1, 1), dim(64, 1, 1), 0, s2, dst, int64(n), 9.0))
	if got := download[float64](t, d, dst, 1)[0]; got != 7 {
		t.Errorf("a synchronous copy read %v while a non-blocking stream's fill was queued, want the old 7", got)
	}
	check(t, "cuStreamSynchronize", d.StreamSynchronize(s2))
	if got := download[float64](t, d, dst, 1)[0]; got != 9 {
		t.Errorf("after cuStreamSynchronize a copy read %v, want 9", got)
	}
	runtime.KeepAlive(host)
	runtime.KeepAlive(host2)
	check(t, "cuStreamDestroy_v2", d.StreamDestroy(s))
	check(t, "cuStreamDestroy_v2", d.StreamDestroy(s2))
}

func loadPTX(d *drv, text string) (uintptr, int32) {
	var m uintptr
	b := append([]byte(text), 0)
	return m, d.ModuleLoadData(&m, &b[0])
}

func TestModuleFunctionsNeedPTXAndHostKernel(t *testing.T) {
	d := setup(t)
	const head = ".version 7.8\n.target sm_90\n.address_size 64\n"
	m, r := loadPTX(d, head+".visible .entry rowsum_f32(\n)\n{\n\tret;\n}\n.visible .entry ghost(\n)\n{\n\tret;\n}\n")
	check(t, "cuModuleLoadData", r)
	var f uintptr
	check(t, "cuModuleGetFunction rowsum_f32", d.ModuleGetFunction(&f, m, "rowsum_f32"))
	if r := d.ModuleGetFunction(&f, m, "histogram"); r != errNotFound {
		t.Errorf("cuModuleGetFunction of a kernel the PTX lacks = %d, want %d (CUDA_ERROR_NOT_FOUND)", r, errNotFound)
	}
	msg := captureStderr(t, func() { r = d.ModuleGetFunction(&f, m, "ghost") })
	if r != errNotFound || !strings.Contains(msg, "ghost is in the PTX but no host kernel") {
		t.Errorf("cuModuleGetFunction of a kernel with no host build = %d, stderr %q; want %d and a message", r, msg, errNotFound)
	}
	if _, r := loadPTX(d, "not a module"); r != errInvalidImage {
		t.Errorf("cuModuleLoadData(garbage) = %d, want %d", r, errInvalidImage)
	}
	if _, r := loadPTX(d, ".version 8.0\n.target sm_100\n"); r != errNoBinary {
		t.Errorf("cuModuleLoadData(sm_100 PTX) = %d, want %d (CUDA_ERROR_NO_BINARY_FOR_GPU)", r, errNoBinary)
	}
}

func TestLaunchLimits(t *testing.T) {
	d := setup(t)
	fill := module(t, d, "fill_f64")[0]
	dst := alloc[float64](t, d, 4)
	for _, c := range []struct {
		grid, block [3]uint32
		smem        uint32
	}{
		{dim(1, 1, 1), dim(1025, 1, 1), 0},
		{dim(1, 1, 1), dim(32, 32, 2), 0},
		{dim(1, 1, 1), dim(1, 1, 65), 0},
		{dim(0, 1, 1), dim(32, 1, 1), 0},
		{dim(1, 65536, 1), dim(32, 1, 1), 0},
		{dim(1, 1, 1), dim(32, 1, 1), 48<<10 + 1}, // over 48 KiB needs the function attribute
	} {
		if r := launch(d, fill, c.grid, c.block, c.smem, 0, dst, int64(4), 1.0); r != errInvalidValue {
			t.Errorf("cuLaunchKernel(grid %v, block %v, shared %d) = %d, want %d", c.grid, c.block, c.smem, r, errInvalidValue)
		}
	}
	check(t, "cuFuncSetAttribute", d.FuncSetAttribute(fill, 8, 100<<10))
	check(t, "cuLaunchKernel with 100 KiB", launch(d, fill, dim(1, 1, 1), dim(1024, 1, 1), 100<<10, 0, dst, int64(4), 1.0))
	if r := launch(d, fill, dim(1, 1, 1), dim(32, 1, 1), 228<<10, 0, dst, int64(4), 1.0); r != errInvalidValue {
		t.Errorf("cuLaunchKernel with 228 KiB of shared memory = %d, want %d", r, errInvalidValue)
	}
	check(t, "cuCtxSynchronize", d.CtxSynchronize())
	if got := download[float64](t, d, dst, 4); got[3] != 1 {
		t.Errorf("fill_f64 wrote %v, want 1", got[3])
	}
}

// TestLegacyStreamOrder: work on the NULL stream waits for earlier work of
// blocking streams and the other way round; a non-blocking stream does not.
func TestLegacyStreamOrder(t *testing.T) {
	d := setup(t)
	fill := module(t, d, "fill_f64")[0]
	const n = 64
	dst := alloc[float64](t, d, n)
	var blocking, free uintptr
	check(t, "cuStreamCreate", d.StreamCreate(&blocking, 0))
	check(t, "cuStreamCreate", d.StreamCreate(&free, 1))
	read := func(s uintptr) float64 {
		h := make([]float64, n)
		check(t, "cuMemcpyDtoHAsync_v2", d.DtoHAsync(unsafe.Pointer(&h[0]), dst, n*8, s))
		check(t, "cuStreamSynchronize", d.StreamSynchronize(s))
		return h[n-1]
	}
	check(t, "cuLaunchKernel", launch(d, fill, dim(1, 1, 1), dim(64, 1, 1), 0, 0, dst, int64(n), 1.0))
	if got := read(blocking); got != 1 {
		t.Errorf("a blocking stream read %v after NULL-stream work, want 1", got)
	}
	check(t, "cuLaunchKernel", launch(d, fill, dim(1, 1, 1), dim(64, 1, 1), 0, blocking, dst, int64(n), 2.0))
	if got := read(0); got != 2 {
		t.Errorf("the NULL stream read %v after a blocking stream's work, want 2", got)
	}
	check(t, "cuLaunchKernel", launch(d, fill, dim(1, 1, 1), dim(64, 1, 1), 0, 0, dst, int64(n), 3.0))
	if got := read(free); got != 2 {
		t.Errorf("a non-blocking stream read %v, want 2: it does not wait for the NULL stream", got)
	}
	check(t, "cuCtxSynchronize", d.CtxSynchronize())
	check(t, "cuStreamDestroy_v2", d.StreamDestroy(blocking))
	check(t, "cuStreamDestroy_v2", d.StreamDestroy(free))
}
