package cuda

import (
	"fmt"
	"runtime"
	"sort"
	"sync"
	"unsafe"

	"github.com/ebitengine/purego"
)

// NVRTC is the loaded run-time compiler (libnvrtc). It needs no GPU.
type NVRTC struct {
	lib *handle
	// Major and Minor are NVRTC's version.
	Major, Minor int

	create, destroy, compile, logSize, log, ptxSize, getPTX, version, errStr uintptr
}

var (
	nvrtcOnce sync.Once
	nvrtc     *NVRTC
	nvrtcErr  error
)

// LoadNVRTC loads libnvrtc once per process.
func LoadNVRTC() (*NVRTC, error) {
	nvrtcOnce.Do(func() { nvrtc, nvrtcErr = loadNVRTC() })
	return nvrtc, nvrtcErr
}

func loadNVRTC() (*NVRTC, error) {
	h, err := libNVRTC.open()
	if err != nil {
		return nil, err
	}
	n := &NVRTC{lib: h}
	err = h.bind([]symbol{
		{"nvrtcCreateProgram", &n.create}, {"nvrtcDestroyProgram", &n.destroy},
		{"nvrtcCompileProgram", &n.compile}, {"nvrtcGetProgramLogSize", &n.logSize},
		{"nvrtcGetProgramLog", &n.log}, {"nvrtcGetPTXSize", &n.ptxSize},
		{"nvrtcGetPTX", &n.getPTX}, {"nvrtcVersion", &n.version},
		{"nvrtcGetErrorString", &n.errStr},
	})
	if err != nil {
		return nil, err
	}
	var maj, min int32
	if err := n.call("nvrtcVersion", n.version, uintptr(unsafe.Pointer(&maj)), uintptr(unsafe.Pointer(&min))); err != nil {
		return nil, err
	}
	n.Major, n.Minor = int(maj), int(min)
	return n, nil
}

//go:uintptrescapes
func (n *NVRTC) call(name string, fn uintptr, args ...uintptr) error {
	r, _, _ := purego.SyscallN(fn, args...)
	if r == 0 {
		return nil
	}
	e := &Error{Call: name, Code: int(int32(r)), Name: fmt.Sprintf("NVRTC_ERROR_%d", int32(r))}
	if p, _, _ := purego.SyscallN(n.errStr, r); p != 0 {
		e.Name = cString(*(**byte)(unsafe.Pointer(&p)))
	}
	return e
}

// Compile compiles the CUDA C unit src (named name) for arch (for example
// "compute_90") with the given headers (include name → contents) and
// returns its PTX, or a *CompileError with NVRTC's log.
func (n *NVRTC) Compile(name string, src []byte, headers map[string][]byte, arch string) ([]byte, error) {
	hnames := make([]string, 0, len(headers))
	for h := range headers {
		hnames = append(hnames, h)
	}
	sort.Strings(hnames)
	var keep [][]byte // the C strings, alive until the calls return
	cs := func(b []byte) *byte {
		c := append(append([]byte{}, b...), 0)
		keep = append(keep, c)
		return &c[0]
	}
	hsrc := make([]*byte, len(hnames)+1)
	hinc := make([]*byte, len(hnames)+1)
	for i, h := range hnames {
		hsrc[i], hinc[i] = cs(headers[h]), cs([]byte(h))
	}
	var prog uintptr
	if err := n.call("nvrtcCreateProgram", n.create, uintptr(unsafe.Pointer(&prog)), uintptr(unsafe.Pointer(cs(src))), uintptr(unsafe.Pointer(cs([]byte(name)))),
		uintptr(len(hnames)), uintptr(unsafe.Pointer(&hsrc[0])), uintptr(unsafe.Pointer(&hinc[0]))); err != nil {
		return nil, &CompileError{Source: name, Arch: arch, Err: err}
	}
	defer n.call("nvrtcDestroyProgram", n.destroy, uintptr(unsafe.Pointer(&prog)))
	opts := []*byte{cs([]byte("--gpu-architecture=" + arch)), cs([]byte("--std=c++14")), nil}
	if err := n.call("nvrtcCompileProgram", n.compile, prog, 2, uintptr(unsafe.Pointer(&opts[0]))); err != nil {
		return nil, &CompileError{Source: name, Arch: arch, Err: err, Log: n.programLog(prog)}
	}
	var size uint64
	if err := n.call("nvrtcGetPTXSize", n.ptxSize, prog, uintptr(unsafe.Pointer(&size))); err != nil {
		return nil, &CompileError{Source: name, Arch: arch, Err: err}
	}
	out := make([]byte, size+1)
	if err := n.call("nvrtcGetPTX", n.getPTX, prog, uintptr(unsafe.Pointer(&out[0]))); err != nil {
		return nil, &CompileError{Source: name, Arch: arch, Err: err}
	}
	for len(out) > 0 && out[len(out)-1] == 0 {
		out = out[:len(out)-1]
	}
	runtime.KeepAlive(keep)
	return out, nil
}

func (n *NVRTC) programLog(prog uintptr) string {
	var size uint64
	if n.call("nvrtcGetProgramLogSize", n.logSize, prog, uintptr(unsafe.Pointer(&size))) != nil || size == 0 {
		return ""
	}
	b := make([]byte, size+1)
	if n.call("nvrtcGetProgramLog", n.log, prog, uintptr(unsafe.Pointer(&b[0]))) != nil {
		return ""
	}
	return cString(&b[0])
}
