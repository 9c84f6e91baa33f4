package emu

import (
	"bytes"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"runtime"
	"sort"
	"strings"
	"sync"
	"testing"
)

//go:embed csrc/*.h csrc/*.cpp
var csrc embed.FS

// Libs names the fake libraries that Build made.
type Libs struct {
	Cuda, Cublas, CublasLt string // full paths of the fake libcuda, libcublas, libcublasLt
	Nccl                   string // full path of the fake libnccl.so.2
}

// Env returns the environment entries that point headroom's loader at the
// fake libraries: HEADROOM_LIBCUDA, HEADROOM_LIBCUBLAS, HEADROOM_LIBCUBLASLT,
// HEADROOM_LIBNCCL.
func (l Libs) Env() []string {
	return []string{"HEADROOM_LIBCUDA=" + l.Cuda, "HEADROOM_LIBCUBLAS=" + l.Cublas, "HEADROOM_LIBCUBLASLT=" + l.CublasLt,
		"HEADROOM_LIBNCCL=" + l.Nccl}
}

// Setenv sets the entries of Env for the duration of the test t.
func (l Libs) Setenv(t testing.TB) {
	for _, kv := range l.Env() {
		k, v, _ := strings.Cut(kv, "=")
		t.Setenv(k, v)
	}
}

// buildVersion is part of every cache key: change it when Build's own way of
// making the libraries (the generated files, the link) changes.
const buildVersion = "3"

// cflags are the flags of every compilation; they are part of the cache key.
var cflags = []string{"-O1", "-fPIC", "-std=c++17", "-w", "-fno-strict-aliasing", "-fvisibility=hidden"}

// Build compiles the kernel sources (file name → contents; every .cu is a
// translation unit, other files such as common.cuh are only included) for the
// host under the emulator's shim, and links them with the fake driver into
// libcuda.so.1 beside a fake libcublas.so, libcublasLt.so and libnccl.so.2. The result is
// cached in a folder named by a hash of all sources, the emulator's own
// sources and the compiler flags (HEADROOM_EMU_CACHE, or headroom/emu under
// os.UserCacheDir), so only the first call for a set of sources compiles.
func Build(sources map[string][]byte) (Libs, error) {
	root, err := cacheRoot()
	if err != nil {
		return Libs{}, err
	}
	dir := filepath.Join(root, key(sources))
	libs := Libs{filepath.Join(dir, "libcuda.so.1"), filepath.Join(dir, "libcublas.so"), filepath.Join(dir, "libcublasLt.so"),
		filepath.Join(dir, "libnccl.so.2")}
	if _, err := os.Stat(filepath.Join(dir, "ok")); err == nil {
		return libs, nil
	}
	if _, err := exec.LookPath("g++"); err != nil {
		return Libs{}, fmt.Errorf("emu: the host emulator needs g++: %w", err)
	}
	if err := os.MkdirAll(root, 0o755); err != nil {
		return Libs{}, fmt.Errorf("emu: %w", err)
	}
	unlock, err := lockCache(root)
	if err != nil {
		return Libs{}, err
	}
	defer unlock()
	if _, err := os.Stat(filepath.Join(dir, "ok")); err == nil {
		return libs, nil // built by another process while this one waited
	}
	tmp, err := os.MkdirTemp(root, "build-")
	if err != nil {
		return Libs{}, fmt.Errorf("emu: %w", err)
	}
	defer os.RemoveAll(tmp)
	if err := compileAll(root, tmp, sources); err != nil {
		return Libs{}, err
	}
	if err := os.WriteFile(filepath.Join(tmp, "ok"), nil, 0o644); err != nil {
		return Libs{}, fmt.Errorf("emu: %w", err)
	}
	// A rename publishes the folder whole; when a parallel build won the race,
	// its folder (built from the same sources) is kept.
	if err := os.Rename(tmp, dir); err != nil {
		if _, serr := os.Stat(filepath.Join(dir, "ok")); serr != nil {
			return Libs{}, fmt.Errorf("emu: publishing %s: %w", dir, err)
		}
	}
	return libs, nil
}

// BuildFS is Build of the regular files directly in dir of fsys (an
// embed.FS of the kernel sources, say).
func BuildFS(fsys fs.FS, dir string) (Libs, error) {
	ents, err := fs.ReadDir(fsys, dir)
	if err != nil {
		return Libs{}, fmt.Errorf("emu: %w", err)
	}
	sources := map[string][]byte{}
	for _, e := range ents {
		if !e.Type().IsRegular() {
			continue
		}
		b, err := fs.ReadFile(fsys, path.Join(dir, e.Name()))
		if err != nil {
			return Libs{}, fmt.Errorf("emu: %w", err)
		}
		sources[e.Name()] = b
	}
	return Build(sources)
}

func cacheRoot() (string, error) {
	if d := os.Getenv("HEADROOM_EMU_CACHE"); d != "" {
		return d, nil
	}
	d, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("emu: no cache folder (set HEADROOM_EMU_CACHE): %w", err)
	}
	return filepath.Join(d, "headroom", "emu"), nil
}

// key hashes the kernel sources, the emulator's sources and the flags.
func key(sources map[string][]byte) string {
	h := sha256.New()
	add := func(name string, b []byte) { fmt.Fprintf(h, "%s\x00%d\x00", name, len(b)); h.Write(b) }
	for _, n := range sortedKeys(sources) {
		add("src/"+n, sources[n])
	}
	ents, _ := fs.ReadDir(csrc, "csrc")
	for _, e := range ents {
		b, _ := csrc.ReadFile("csrc/" + e.Name())
		add("emu/"+e.Name(), b)
	}
	add("flags", []byte(strings.Join(append(append([]string{}, cflags...), boundsFlags()...), " ")))
	add("compiler", []byte(compilerVersion()))
	add("build", []byte(buildVersion))
	return hex.EncodeToString(h.Sum(nil))[:24]
}

var (
	versionOnce sync.Once
	version     string
	boundsOnce  sync.Once
	bounds      []string
)

// boundsFlags are the flags that make a kernel's out-of-bounds index into an
// array of known size (a __shared__ array, a local array) stop the process
// with a message naming the source line: g++'s bounds sanitizer, when its
// run-time library (libubsan) is installed; none otherwise.
func boundsFlags() []string {
	boundsOnce.Do(func() {
		out, err := exec.Command("g++", "-print-file-name=libubsan.so").Output()
		if p := strings.TrimSpace(string(out)); err == nil && filepath.IsAbs(p) {
			bounds = []string{"-fsanitize=bounds", "-fno-sanitize-recover=bounds"}
		}
	})
	return bounds
}

// compilerVersion is g++'s version, part of every cache key.
func compilerVersion() string {
	versionOnce.Do(func() {
		out, _ := exec.Command("g++", "-dumpfullversion", "-dumpversion").Output()
		version = strings.TrimSpace(string(out))
	})
	return version
}

func sortedKeys(m map[string][]byte) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

// compileAll writes the sources under tmp and builds the four libraries there.
func compileAll(root, tmp string, sources map[string][]byte) error {
	src, emuDir, obj := filepath.Join(tmp, "src"), filepath.Join(tmp, "emu"), filepath.Join(tmp, "obj")
	for _, d := range []string{src, emuDir, obj} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return fmt.Errorf("emu: %w", err)
		}
	}
	for n, b := range sources {
		if strings.ContainsAny(n, `/\`) || n == "" || n[0] == '.' {
			return fmt.Errorf("emu: source name %q: want a plain file name", n)
		}
		if err := os.WriteFile(filepath.Join(src, n), b, 0o644); err != nil {
			return fmt.Errorf("emu: %w", err)
		}
	}
	ents, _ := fs.ReadDir(csrc, "csrc")
	for _, e := range ents {
		b, _ := csrc.ReadFile("csrc/" + e.Name())
		if err := os.WriteFile(filepath.Join(emuDir, e.Name()), b, 0o644); err != nil {
			return fmt.Errorf("emu: %w", err)
		}
	}
	units := planUnits(root, sources, src, emuDir, obj)
	if err := compileUnits(units, emuDir, src); err != nil {
		return err
	}
	var objs []string
	for _, u := range units {
		objs = append(objs, u.cached)
	}
	cuda := filepath.Join(tmp, "libcuda.so.1")
	link := append(append(append([]string{"-shared", "-o", cuda, "-Wl,-soname,libcuda.so.1"}, boundsFlags()...), objs...), "-lpthread")
	if err := gxx(link...); err != nil {
		return err
	}
	if err := gxx(append(cflags, "-shared", "-I", emuDir, "-o", filepath.Join(tmp, "libcublas.so"), "-Wl,-soname,libcublas.so",
		filepath.Join(emuDir, "cublas.cpp"), cuda, "-Wl,--disable-new-dtags,-rpath,$ORIGIN")...); err != nil {
		return err
	}
	if err := gxx(append(cflags, "-shared", "-I", emuDir, "-o", filepath.Join(tmp, "libcublasLt.so"), "-Wl,-soname,libcublasLt.so",
		filepath.Join(emuDir, "cublaslt.cpp"))...); err != nil {
		return err
	}
	return gxx(append(cflags, "-shared", "-I", emuDir, "-o", filepath.Join(tmp, "libnccl.so.2"), "-Wl,-soname,libnccl.so.2",
		filepath.Join(emuDir, "nccl.cpp"), cuda, "-Wl,--disable-new-dtags,-rpath,$ORIGIN", "-lpthread")...)
}

// unit is one compilation: a kernel source (scanned for entries and compiled
// with the shim and a registration of each) or an emulator source. Its object
// is cached under root/obj by a hash of what it is built from, so changing
// one kernel source recompiles only that source.
type unit struct{ kernel, file, obj, cached string }

// emuUnits are the fake driver's sources, linked into libcuda.so.1.
var emuUnits = []string{"sched.cpp", "registry.cpp", "driver.cpp", "memory.cpp", "stream.cpp", "module.cpp"}

func planUnits(root string, sources map[string][]byte, src, emuDir, obj string) []unit {
	emuKey := key(nil)
	headers := map[string][]byte{}
	for n, b := range sources {
		if !strings.HasSuffix(n, ".cu") {
			headers[n] = b
		}
	}
	hdrKey := key(headers)
	objKey := func(parts ...string) string {
		h := sha256.Sum256([]byte(strings.Join(parts, "\x00")))
		return filepath.Join(root, "obj", hex.EncodeToString(h[:12])+".o")
	}
	var units []unit
	for _, n := range sortedKeys(sources) {
		if strings.HasSuffix(n, ".cu") {
			units = append(units, unit{kernel: filepath.Join(src, n), obj: filepath.Join(obj, n+".o"),
				cached: objKey(emuKey, hdrKey, n, string(sources[n]))})
		}
	}
	for _, n := range emuUnits {
		units = append(units, unit{file: filepath.Join(emuDir, n), obj: filepath.Join(obj, n+".o"), cached: objKey(emuKey, n)})
	}
	return units
}

func compileUnits(units []unit, emuDir, src string) error {
	errs := make([]error, len(units))
	sem := make(chan struct{}, runtime.NumCPU())
	var wg sync.WaitGroup
	for i, u := range units {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			if _, err := os.Stat(u.cached); err == nil {
				return
			}
			if errs[i] = u.compile(emuDir, src); errs[i] == nil {
				errs[i] = publish(u.obj, u.cached)
			}
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// publish moves a finished file into the cache in one rename.
func publish(from, to string) error {
	if err := os.MkdirAll(filepath.Dir(to), 0o755); err != nil {
		return fmt.Errorf("emu: %w", err)
	}
	if err := os.Rename(from, to); err != nil {
		return fmt.Errorf("emu: %w", err)
	}
	return nil
}

func (u unit) compile(emuDir, src string) error {
	inc := []string{"-I", emuDir, "-I", src}
	if u.kernel == "" {
		return gxx(append(append(append([]string{}, cflags...), inc...), "-c", "-o", u.obj, u.file)...)
	}
	names, err := entries(u.kernel, inc)
	if err != nil {
		return err
	}
	var w bytes.Buffer
	// The source is included by its plain name from its own folder, so
	// messages (g++'s, the bounds checker's) name it as "kernels.cu:12".
	fmt.Fprintf(&w, "// Code generated by emu.Build for %s. DO NOT EDIT.\n#include %q\n", filepath.Base(u.kernel), filepath.Base(u.kernel))
	for _, n := range names {
		fmt.Fprintf(&w, "EMU_REGISTER(%s)\n", n)
	}
	wrap := u.obj + ".cpp"
	if err := os.WriteFile(wrap, w.Bytes(), 0o644); err != nil {
		return fmt.Errorf("emu: %w", err)
	}
	args := append(append(append(append([]string{}, cflags...), boundsFlags()...), "-I", emuDir, "-iquote", "."), "-x", "c++", "-include", "shim.h", "-c", "-o", u.obj, wrap)
	return gxxIn(src, args...)
}

// entryRE matches an entry point in preprocessed source, where the shim spells
// __global__ as EMU_GLOBAL_ENTRY.
var entryRE = regexp.MustCompile(`extern\s+"C"\s+EMU_GLOBAL_ENTRY\s+void\s+([A-Za-z_][A-Za-z0-9_]*)\s*\(`)

// entries lists the extern "C" __global__ functions of a kernel source after
// preprocessing (so entries made by macros count).
func entries(path string, inc []string) ([]string, error) {
	args := append(append(append([]string{}, cflags...), inc...), "-DEMU_SCAN", "-E", "-P", "-x", "c++", "-include", "shim.h", path)
	out, err := exec.Command("g++", args...).Output()
	if err != nil {
		msg := err.Error()
		if ee, ok := err.(*exec.ExitError); ok {
			msg = string(ee.Stderr)
		}
		return nil, fmt.Errorf("emu: preprocessing %s: %s", filepath.Base(path), msg)
	}
	seen := map[string]bool{}
	var names []string
	for _, m := range entryRE.FindAllSubmatch(out, -1) {
		if n := string(m[1]); !seen[n] {
			seen[n] = true
			names = append(names, n)
		}
	}
	return names, nil
}

func gxx(args ...string) error { return gxxIn("", args...) }

// gxxIn runs g++ in the folder dir ("": the current one).
func gxxIn(dir string, args ...string) error {
	cmd := exec.Command("g++", args...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("emu: g++ %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return nil
}
