package cuda

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"runtime"
	"strings"
	"testing"
	"unsafe"

	"github.com/ebitengine/purego"
)

// TestKernelsCompile compiles every kernel source of the kernels folder with
// NVRTC for compute_80 (A100) and compute_90 (H100, H200) and checks that
// the PTX declares kernels. It is CI's compile check of the CUDA C: it needs NVRTC (set
// HEADROOM_LIBNVRTC to its path, or install it where the loader looks) and
// fails when HEADROOM_REQUIRE_NVRTC=1 and NVRTC is missing.
func TestKernelsCompile(t *testing.T) {
	rtc, err := openNVRTC()
	if err != nil {
		if os.Getenv("HEADROOM_REQUIRE_NVRTC") == "1" {
			t.Fatalf("NVRTC is required (HEADROOM_REQUIRE_NVRTC=1): %v", err)
		}
		t.Skipf("no NVRTC here: %v", err)
	}
	srcs := os.DirFS("kernels")
	headers := map[string][]byte{}
	var units []string
	err = fs.WalkDir(srcs, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := fs.ReadFile(srcs, p)
		switch path.Ext(p) {
		case ".cuh", ".h":
			headers[p] = b
		case ".cu":
			units = append(units, p)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(units) == 0 {
		t.Fatal("no .cu sources in kernels/")
	}
	for _, u := range units {
		src, _ := fs.ReadFile(srcs, u)
		for _, arch := range []string{"compute_80", "compute_90"} {
			t.Run(u+"/"+arch, func(t *testing.T) {
				t.Parallel()
				ptx, log, err := rtc.compile(u, src, headers, arch)
				if err != nil {
					t.Fatalf("NVRTC %s for %s: %v\n%s", u, arch, err, log)
				}
				if !bytes.Contains(ptx, []byte(".entry ")) {
					t.Errorf("%s for %s: the PTX declares no kernel", u, arch)
				}
			})
		}
	}
}

// nvrtc is the few NVRTC functions the compile check calls.
type nvrtc struct {
	create    func(prog *uintptr, src, name string, n int32, headers, names uintptr) int32
	compileFn func(prog uintptr, n int32, opts uintptr) int32
	logSize   func(prog uintptr, n *uintptr) int32
	getLog    func(prog uintptr, buf *byte) int32
	ptxSize   func(prog uintptr, n *uintptr) int32
	getPTX    func(prog uintptr, buf *byte) int32
	destroy   func(prog *uintptr) int32
	errString func(code int32) string
}

func openNVRTC() (*nvrtc, error) {
	names := []string{"libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so.11.2", "/usr/lib/x86_64-linux-gnu/libnvrtc.so.11.2"}
	if p := os.Getenv("HEADROOM_LIBNVRTC"); p != "" {
		names = []string{p}
	}
	var lib uintptr
	var errs []error
	for _, n := range names {
		h, err := purego.Dlopen(n, purego.RTLD_NOW|purego.RTLD_GLOBAL)
		if err == nil {
			lib = h
			break
		}
		errs = append(errs, err)
	}
	if lib == 0 {
		return nil, fmt.Errorf("libnvrtc not found: %w", errors.Join(errs...))
	}
	r := &nvrtc{}
	for sym, fn := range map[string]any{
		"nvrtcCreateProgram": &r.create, "nvrtcCompileProgram": &r.compileFn,
		"nvrtcGetProgramLogSize": &r.logSize, "nvrtcGetProgramLog": &r.getLog,
		"nvrtcGetPTXSize": &r.ptxSize, "nvrtcGetPTX": &r.getPTX,
		"nvrtcDestroyProgram": &r.destroy, "nvrtcGetErrorString": &r.errString,
	} {
		p, err := purego.Dlsym(lib, sym)
		if err != nil {
			return nil, fmt.Errorf("libnvrtc lacks %s: %w", sym, err)
		}
		purego.RegisterFunc(fn, p)
	}
	return r, nil
}

// cstrings returns a C array of NUL-terminated copies of ss; keep holds the
// Go memory alive until the call is done.
func cstrings(ss []string) (arr []*byte, keep [][]byte) {
	for _, s := range ss {
		b := append([]byte(s), 0)
		keep = append(keep, b)
		arr = append(arr, &b[0])
	}
	return arr, keep
}

// compile returns the PTX of src for arch, and NVRTC's log.
func (r *nvrtc) compile(name string, src []byte, headers map[string][]byte, arch string) (ptx []byte, log string, err error) {
	var hs, hn []string
	for n, b := range headers {
		hn = append(hn, n)
		hs = append(hs, string(b))
	}
	hsArr, k1 := cstrings(hs)
	hnArr, k2 := cstrings(hn)
	opts, k3 := cstrings([]string{"--gpu-architecture=" + arch, "--std=c++17"})
	var prog uintptr
	var hp, np uintptr
	if len(hsArr) > 0 {
		hp, np = uintptr(unsafe.Pointer(&hsArr[0])), uintptr(unsafe.Pointer(&hnArr[0]))
	}
	if c := r.create(&prog, string(src), name, int32(len(hs)), hp, np); c != 0 {
		return nil, "", fmt.Errorf("nvrtcCreateProgram: %s", r.errString(c))
	}
	defer r.destroy(&prog)
	c := r.compileFn(prog, int32(len(opts)), uintptr(unsafe.Pointer(&opts[0])))
	runtime.KeepAlive(hsArr)
	runtime.KeepAlive(hnArr)
	runtime.KeepAlive(opts)
	runtime.KeepAlive([][][]byte{k1, k2, k3})
	var n uintptr
	r.logSize(prog, &n)
	if n > 0 {
		buf := make([]byte, n)
		r.getLog(prog, &buf[0])
		log = strings.TrimRight(string(buf), "\x00")
	}
	if c != 0 {
		return nil, log, fmt.Errorf("nvrtcCompileProgram: %s", r.errString(c))
	}
	r.ptxSize(prog, &n)
	ptx = make([]byte, n)
	r.getPTX(prog, &ptx[0])
	return ptx, log, nil
}
