package cuda

import (
	"bytes"
	"errors"
	"os"
	"strings"
	"testing"
)

const testKernel = `#include "common.cuh"
extern "C" __global__ void row_sum(const float* x, float* y, int cols) {
	__shared__ float part[256];
	int r = blockIdx.x;
	float s = 0;
	for (int j = threadIdx.x; j < cols; j += blockDim.x) s += x[(long long)r * cols + j];
	part[threadIdx.x] = s;
	__syncthreads();
	for (int w = blockDim.x / 2; w > 0; w /= 2) {
		if (threadIdx.x < w) part[threadIdx.x] += part[threadIdx.x + w];
		__syncthreads();
	}
	if (threadIdx.x == 0) y[r] = SCALE * part[0];
}
`

// TestCompile compiles a kernel with a header for the two targets with
// the real NVRTC (installed on the project's machines).
func TestCompile(t *testing.T) {
	rtc, err := LoadNVRTC()
	if err != nil {
		t.Fatalf("NVRTC: %v", err)
	}
	hdr := map[string][]byte{"common.cuh": []byte("#define SCALE 2.0f\n")}
	for _, arch := range []string{"compute_80", "compute_90"} {
		ptx, err := rtc.Compile("t.cu", []byte(testKernel), hdr, arch)
		if err != nil {
			t.Fatalf("%s: %v", arch, err)
		}
		want := ".target sm_" + strings.TrimPrefix(arch, "compute_")
		if !bytes.Contains(ptx, []byte(".entry row_sum")) || !bytes.Contains(ptx, []byte(want)) {
			t.Fatalf("%s: PTX lacks .entry row_sum or %q:\n%.400s", arch, want, ptx)
		}
	}
}

// TestCompileError: a source that does not compile gives a *CompileError
// whose log names the problem.
func TestCompileError(t *testing.T) {
	rtc, err := LoadNVRTC()
	if err != nil {
		t.Fatalf("NVRTC: %v", err)
	}
	_, err = rtc.Compile("bad.cu", []byte(`extern "C" __global__ void f() { undefined_thing(); }`), nil, "compute_80")
	var ce *CompileError
	if !errors.As(err, &ce) || !strings.Contains(ce.Log, "undefined_thing") {
		t.Fatalf("got %v, want a *CompileError whose log names undefined_thing", err)
	}
}

// TestNoDriver: this machine has no libcuda, so the driver does not load
// and says why (skipped where a driver is installed or named).
func TestNoDriver(t *testing.T) {
	if os.Getenv("HEADROOM_LIBCUDA") != "" {
		t.Skip("HEADROOM_LIBCUDA names a driver")
	}
	_, err := LoadDriver()
	if err == nil {
		t.Skip("a CUDA driver is installed here")
	}
	if !errors.Is(err, ErrNoDriver) || !strings.Contains(err.Error(), "HEADROOM_LIBCUDA") {
		t.Fatalf("got %v, want ErrNoDriver naming HEADROOM_LIBCUDA", err)
	}
}

// TestEnvPath: a library path in the environment that does not exist is
// the only one tried and the error names it.
func TestEnvPath(t *testing.T) {
	t.Setenv("HEADROOM_LIBCUBLAS", "/nonexistent/libcublas.so")
	_, err := libCublas.open()
	if !errors.Is(err, ErrNoCublas) || !strings.Contains(err.Error(), "HEADROOM_LIBCUBLAS=/nonexistent/libcublas.so") {
		t.Fatalf("got %v, want ErrNoCublas naming the path", err)
	}
}

// TestMissingSymbol: a library without a symbol gives a *LoadError naming
// both (libc has no cuInit).
func TestMissingSymbol(t *testing.T) {
	h, err := library{"HEADROOM_TEST_LIBC", []string{"libc.so.6"}, ErrNoDriver}.open()
	if err != nil {
		t.Skip("no libc.so.6")
	}
	var p uintptr
	err = h.bind([]symbol{{"strlen", &p}, {"cuInit", &p}})
	var le *LoadError
	if !errors.As(err, &le) || le.Symbol != "cuInit" || !errors.Is(err, ErrNoDriver) {
		t.Fatalf("got %v, want a *LoadError for cuInit", err)
	}
}

// TestErrorIs: driver errors match the sentinels of their code only.
func TestErrorIs(t *testing.T) {
	e := &Error{Call: "cuMemCreate", Code: 2, Name: "CUDA_ERROR_OUT_OF_MEMORY"}
	if !errors.Is(e, ErrOutOfMemory) || errors.Is(e, ErrLaunchFailed) {
		t.Fatalf("%v: Is(ErrOutOfMemory) %v, Is(ErrLaunchFailed) %v", e, errors.Is(e, ErrOutOfMemory), errors.Is(e, ErrLaunchFailed))
	}
	if errors.Is(&Error{Call: "x", Code: 2, Name: "CUBLAS_STATUS_2"}, ErrOutOfMemory) {
		t.Fatal("a cuBLAS status 2 matched CUDA's out of memory")
	}
}
