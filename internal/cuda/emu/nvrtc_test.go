package emu

import (
	"fmt"
	"os"
	"runtime"
	"sort"
	"strings"
	"unsafe"

	"github.com/ebitengine/purego"
)

// compilePTX compiles kernels.cu with the real NVRTC for compute_90, as the
// CUDA backend does, so the fake driver checks a real PTX's entries.
func compilePTX(srcs map[string][]byte) ([]byte, error) {
	lib, err := openNVRTC()
	if err != nil {
		return nil, err
	}
	var nv struct {
		Create  func(*uintptr, *byte, *byte, int32, **byte, **byte) int32 `sym:"nvrtcCreateProgram"`
		Compile func(uintptr, int32, **byte) int32                        `sym:"nvrtcCompileProgram"`
		LogSize func(uintptr, *uintptr) int32                             `sym:"nvrtcGetProgramLogSize"`
		Log     func(uintptr, *byte) int32                                `sym:"nvrtcGetProgramLog"`
		PTXSize func(uintptr, *uintptr) int32                             `sym:"nvrtcGetPTXSize"`
		PTX     func(uintptr, *byte) int32                                `sym:"nvrtcGetPTX"`
		Destroy func(*uintptr) int32                                      `sym:"nvrtcDestroyProgram"`
	}
	if err := bindStruct(&nv, func(s string) uintptr { p, _ := purego.Dlsym(lib, s); return p }); err != nil {
		return nil, err
	}
	var names, bodies []*byte
	var hdrs []string
	for n := range srcs {
		if !strings.HasSuffix(n, ".cu") {
			hdrs = append(hdrs, n)
		}
	}
	sort.Strings(hdrs)
	for _, n := range hdrs {
		names, bodies = append(names, cstr(n)), append(bodies, cstr(string(srcs[n])))
	}
	var prog uintptr
	if r := nv.Create(&prog, cstr(string(srcs["kernels.cu"])), cstr("kernels.cu"), int32(len(hdrs)), &bodies[0], &names[0]); r != 0 {
		return nil, fmt.Errorf("nvrtcCreateProgram = %d", r)
	}
	defer nv.Destroy(&prog)
	opts := []*byte{cstr("--gpu-architecture=compute_90")}
	if r := nv.Compile(prog, int32(len(opts)), &opts[0]); r != 0 {
		var n uintptr
		nv.LogSize(prog, &n)
		log := make([]byte, n+1)
		nv.Log(prog, &log[0])
		return nil, fmt.Errorf("nvrtcCompileProgram = %d:\n%s", r, log)
	}
	var n uintptr
	nv.PTXSize(prog, &n)
	out := make([]byte, n)
	nv.PTX(prog, &out[0])
	runtime.KeepAlive(names)
	runtime.KeepAlive(bodies)
	return out, nil
}

func openNVRTC() (uintptr, error) {
	cands := []string{"libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so.11.2"}
	if p := os.Getenv("HEADROOM_LIBNVRTC"); p != "" {
		cands = []string{p}
	}
	var errs []string
	for _, c := range cands {
		h, err := purego.Dlopen(c, purego.RTLD_NOW|purego.RTLD_GLOBAL)
		if err == nil {
			return h, nil
		}
		errs = append(errs, err.Error())
	}
	return 0, fmt.Errorf("the emulator's tests need NVRTC (set HEADROOM_LIBNVRTC): %s", strings.Join(errs, "; "))
}

// cstr returns a NUL-terminated copy of s on the Go heap (which does not move).
func cstr(s string) *byte {
	b := append([]byte(s), 0)
	return &b[0]
}

// unsafePtr is the address of a slice's first element as a device-call argument.
func unsafePtr[T any](s []T) unsafe.Pointer { return unsafe.Pointer(&s[0]) }
