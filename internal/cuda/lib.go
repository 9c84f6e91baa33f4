package cuda

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/ebitengine/purego"
)

// library says how to find one shared library: the environment variable
// that may name its path, and its sonames, newest first.
type library struct {
	env   string
	names []string
	kind  error
}

var (
	libCuda     = library{"HEADROOM_LIBCUDA", []string{"libcuda.so.1", "libcuda.so"}, ErrNoDriver}
	libNVRTC    = library{"HEADROOM_LIBNVRTC", []string{"libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so.11.2", "libnvrtc.so"}, ErrNoNVRTC}
	libCublas   = library{"HEADROOM_LIBCUBLAS", []string{"libcublas.so.13", "libcublas.so.12", "libcublas.so.11", "libcublas.so"}, ErrNoCublas}
	libCublasLt = library{"HEADROOM_LIBCUBLASLT", []string{"libcublasLt.so.13", "libcublasLt.so.12", "libcublasLt.so.11", "libcublasLt.so"}, ErrNoCublas}
)

// dirs returns the toolkit folders searched after the sonames.
func dirs() []string {
	var d []string
	if h := os.Getenv("CUDA_HOME"); h != "" {
		d = append(d, filepath.Join(h, "lib64"))
	}
	return append(d, "/usr/local/cuda/lib64", "/usr/lib/x86_64-linux-gnu")
}

// handle is one loaded library.
type handle struct {
	h    uintptr
	path string
	kind error
}

// open loads the library: the path its environment variable names (only
// that one, when set), else each soname through the dynamic loader's search,
// else each soname in the toolkit folders.
func (l library) open() (*handle, error) {
	if p := os.Getenv(l.env); p != "" {
		h, err := purego.Dlopen(p, purego.RTLD_NOW|purego.RTLD_GLOBAL)
		if err != nil {
			return nil, &LoadError{Lib: p, Detail: fmt.Sprintf("%s=%s: %v", l.env, p, err), kind: l.kind}
		}
		return &handle{h, p, l.kind}, nil
	}
	var tried []string
	try := func(p string) *handle {
		h, err := purego.Dlopen(p, purego.RTLD_NOW|purego.RTLD_GLOBAL)
		if err != nil {
			tried = append(tried, p)
			return nil
		}
		return &handle{h, p, l.kind}
	}
	for _, n := range l.names {
		if h := try(n); h != nil {
			return h, nil
		}
	}
	for _, d := range dirs() {
		for _, n := range l.names {
			if h := try(filepath.Join(d, n)); h != nil {
				return h, nil
			}
		}
	}
	return nil, &LoadError{Lib: l.names[0], Detail: fmt.Sprintf("%s not found (tried %s; set %s to its path)", l.names[0], strings.Join(tried, ", "), l.env), kind: l.kind}
}

// sym looks a symbol up, as a typed error when it is missing.
func (h *handle) sym(name string) (uintptr, error) {
	p, err := purego.Dlsym(h.h, name)
	if err != nil || p == 0 {
		return 0, &LoadError{Lib: h.path, Symbol: name, kind: h.kind}
	}
	return p, nil
}

// symbol is one function to bind: its exported name and where its address goes.
type symbol struct {
	name string
	p    *uintptr
}

// bind looks up every symbol of a table, returning the first missing one (in the table's order).
func (h *handle) bind(table []symbol) error {
	var errs []error
	for _, t := range table {
		v, err := h.sym(t.name)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		*t.p = v
	}
	if len(errs) > 0 {
		return errs[0]
	}
	return nil
}

// close unloads the library.
func (h *handle) close() { _ = purego.Dlclose(h.h) }

// IsMissing reports whether err says a library or symbol is missing.
func IsMissing(err error) bool {
	var le *LoadError
	return errors.As(err, &le)
}
