package cuda

import (
	"bytes"
	"embed"
	"errors"
	"fmt"
	"path"
	"sort"
	"strings"
	"sync"

	"github.com/headroom-ml/headroom/internal/cuda"
)

// The kernel sources: every .cu is one module, compiled by NVRTC at the
// first use of one of its kernels; .cuh files are the headers they include.
//
//go:embed kernels/*.cu kernels/*.cuh
var kernelFS embed.FS

// Sources returns the kernel sources by file name (for the emulator's
// build, which compiles the same files for the host).
func Sources() map[string][]byte {
	out := map[string][]byte{}
	ents, _ := kernelFS.ReadDir("kernels")
	for _, e := range ents {
		b, _ := kernelFS.ReadFile("kernels/" + e.Name())
		out[e.Name()] = b
	}
	return out
}

// ErrNoKernel is wrapped by the error of a launch of a kernel that no
// source defines.
var ErrNoKernel = errors.New("no such kernel in the cuda sources")

// ptxCache holds compiled PTX per (file, arch) for the whole process, so
// that a second device of the same architecture compiles nothing.
var ptxCache sync.Map // key string → []byte

// modules is one device's loaded modules and resolved functions; the
// worker alone uses it.
type modules struct {
	rtc    *cuda.NVRTC
	arch   string
	units  []string          // .cu files, in the order to search
	hdrs   map[string][]byte // headers
	srcs   map[string][]byte
	loaded map[string]cuda.Module // by file
	entry  map[string]string      // kernel name → file, of the files compiled so far
	fns    map[string]cuda.Function
}

func newModules(rtc *cuda.NVRTC, arch string) *modules {
	m := &modules{rtc: rtc, arch: arch, hdrs: map[string][]byte{}, srcs: Sources(),
		loaded: map[string]cuda.Module{}, entry: map[string]string{}, fns: map[string]cuda.Function{}}
	for n, b := range m.srcs {
		if path.Ext(n) == ".cu" {
			m.units = append(m.units, n)
		} else {
			m.hdrs[n] = b
		}
	}
	sort.Strings(m.units)
	return m
}

// function returns the kernel name, compiling and loading its module at
// its first use. The file is found from the name's base (the part before
// the dtype suffix: "softmax_f32" in softmax.cu, say) first, then by
// compiling the others in order.
func (m *modules) function(g *gpu, name string) (cuda.Function, error) {
	if f, ok := m.fns[name]; ok {
		return f, nil
	}
	for _, u := range m.order(name) {
		if _, ok := m.loaded[u]; !ok {
			if err := m.load(g, u); err != nil {
				return 0, err
			}
		}
		if m.entry[name] == u {
			f, err := g.drv.ModuleFunction(m.loaded[u], name)
			if err != nil {
				return 0, err
			}
			m.fns[name] = f
			return f, nil
		}
	}
	return 0, fmt.Errorf("%w: %s (sources: %s)", ErrNoKernel, name, strings.Join(m.units, ", "))
}

// order lists the units to look in for name: the compiled one that has
// it, else the guess from its base, then the rest.
func (m *modules) order(name string) []string {
	if u, ok := m.entry[name]; ok {
		return []string{u}
	}
	var first, rest []string
	for _, u := range m.units {
		if strings.HasPrefix(name, strings.TrimSuffix(u, ".cu")) {
			first = append(first, u)
		} else {
			rest = append(rest, u)
		}
	}
	return append(first, rest...)
}

// load compiles (or takes from the cache) and loads one unit, noting its
// entry points.
func (m *modules) load(g *gpu, u string) error {
	key := u + "\x00" + m.arch
	var ptx []byte
	if v, ok := ptxCache.Load(key); ok {
		ptx = v.([]byte)
	} else if ptx = m.cachedPTX(u); ptx != nil {
		ptxCache.Store(key, ptx)
	} else {
		var err error
		if ptx, err = m.rtc.Compile(u, m.srcs[u], m.hdrs, m.arch); err != nil {
			return err
		}
		ptxCache.Store(key, ptx)
		m.storePTX(u, ptx)
	}
	mod, err := g.drv.ModuleLoad(ptx)
	if err != nil {
		return fmt.Errorf("loading %s: %w", u, err)
	}
	m.loaded[u] = mod
	for _, e := range entries(ptx) {
		m.entry[e] = u
	}
	return nil
}

// entries returns the names of the PTX's kernels (".entry NAME(").
func entries(ptx []byte) []string {
	var out []string
	key := []byte(".entry ")
	for {
		i := bytes.Index(ptx, key)
		if i < 0 {
			return out
		}
		ptx = ptx[i+len(key):]
		n := bytes.IndexAny(ptx, "( \t\n")
		if n < 0 {
			n = len(ptx)
		}
		out = append(out, string(ptx[:n]))
		ptx = ptx[n:]
	}
}

// unload unloads every module.
func (m *modules) unload(drv *cuda.Driver) error {
	var errs []error
	for u, mod := range m.loaded {
		errs = append(errs, drv.ModuleUnload(mod))
		delete(m.loaded, u)
	}
	clear(m.fns)
	return errors.Join(errs...)
}
