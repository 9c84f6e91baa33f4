// Until h1's launch API (kern, Arg, launch, Open) is merged into branch h3,
// this file builds only with -tags cudakernels (zz_stub_test.go stands in).

//go:build cudakernels

package cuda

// TEMPORARY (deleted when h1 merges): h1's contract over the emulator's fake driver,
// so that h3's adapters can be tested before h1's backend lands.

import (
	"encoding/binary"
	"fmt"
	"io/fs"
	"math"
	"os"
	"runtime"
	"sync"
	"unsafe"

	"github.com/ebitengine/purego"
	"github.com/headroom-ml/headroom/device"
	"github.com/headroom-ml/headroom/dtype"
	icuda "github.com/headroom-ml/headroom/internal/cuda"
)

type drv struct {
	Init           func(uint32) int32
	PrimaryRetain  func(*uintptr, int32) int32
	CtxSetCurrent  func(uintptr) int32
	CtxSync        func() int32
	MemAlloc       func(*uintptr, uintptr) int32
	MemFree        func(uintptr) int32
	HtoD           func(uintptr, unsafe.Pointer, uintptr) int32
	DtoH           func(unsafe.Pointer, uintptr, uintptr) int32
	ModuleLoadData func(*uintptr, *byte) int32
	GetFunction    func(*uintptr, uintptr, string) int32
	Launch         func(uintptr, uint32, uint32, uint32, uint32, uint32, uint32, uint32, uintptr, unsafe.Pointer, uintptr) int32
}

type gpu struct {
	d    drv
	ctx  uintptr
	mods []uintptr
	fns  map[string]uintptr
	mu   sync.Mutex
}

type kern struct {
	device.Kernels
	g *gpu
}

type Arg struct{ b []byte }

func (k *kern) Ptr(o device.Operand) Arg {
	if o.Block == nil {
		return U64(0)
	}
	return U64(uint64(o.Block.Ptr()) + uint64(o.Off*o.DType.Size()))
}
func Int(v int) Arg {
	b := make([]byte, 4)
	binary.LittleEndian.PutUint32(b, uint32(int32(v)))
	return Arg{b}
}
func I64(v int64) Arg { return U64(uint64(v)) }
func U64(v uint64) Arg {
	b := make([]byte, 8)
	binary.LittleEndian.PutUint64(b, v)
	return Arg{b}
}
func F32(v float32) Arg {
	b := make([]byte, 4)
	binary.LittleEndian.PutUint32(b, math.Float32bits(v))
	return Arg{b}
}
func F64(v float64) Arg { return U64(math.Float64bits(v)) }
func Lay(o device.Operand) Arg {
	b := make([]byte, 136)
	st := o.Strides
	if st == nil {
		st = denseStrides(o.Shape)
	}
	for i := range o.Shape {
		binary.LittleEndian.PutUint64(b[8*i:], uint64(o.Shape[i]))
		binary.LittleEndian.PutUint64(b[64+8*i:], uint64(st[i]))
	}
	binary.LittleEndian.PutUint32(b[128:], uint32(len(o.Shape)))
	return Arg{b}
}

type Launch struct {
	Grid, Block [3]uint32
	Shared      uint32
}

func Linear(n int) Launch {
	b := (n + 255) / 256
	b = max(1, min(b, 64))
	return Launch{Grid: [3]uint32{uint32(b), 1, 1}, Block: [3]uint32{256, 1, 1}}
}

func Suffix(dt dtype.DType) string { return dt.String() }

func (k *kern) launch(fn string, l Launch, args ...Arg) {
	g := k.g
	g.enter()
	f, ok := g.fns[fn]
	if !ok {
		for _, m := range g.mods {
			var h uintptr
			if g.d.GetFunction(&h, m, fn) == 0 {
				f, ok = h, true
				break
			}
		}
		if !ok {
			panic("stub: no kernel " + fn)
		}
		g.fns[fn] = f
	}
	params := make([]unsafe.Pointer, len(args))
	var pin runtime.Pinner
	defer pin.Unpin()
	for i, a := range args {
		pin.Pin(&a.b[0])
		params[i] = unsafe.Pointer(&a.b[0])
	}
	pin.Pin(&params[0])
	if r := g.d.Launch(f, l.Grid[0], l.Grid[1], l.Grid[2], l.Block[0], l.Block[1], l.Block[2], l.Shared, 0, unsafe.Pointer(&params[0]), 0); r != 0 {
		panic(fmt.Sprintf("stub: launch %s: %d", fn, r))
	}
}

func (g *gpu) enter() {
	runtime.LockOSThread()
	g.d.CtxSetCurrent(g.ctx)
}

func (k *kern) Write(dst device.Operand, src []byte) {
	k.g.enter()
	if len(src) > 0 {
		k.g.d.HtoD(dst.Block.Ptr()+uintptr(dst.Off*dst.DType.Size()), unsafe.Pointer(&src[0]), uintptr(len(src)))
	}
}

func (k *kern) Read(dst []byte, src device.Operand) {
	k.g.enter()
	if r := k.g.d.CtxSync(); r != 0 {
		panic(fmt.Sprintf("stub: sync %d", r))
	}
	if len(dst) > 0 {
		k.g.d.DtoH(unsafe.Pointer(&dst[0]), src.Block.Ptr()+uintptr(src.Off*src.DType.Size()), uintptr(len(dst)))
	}
}

type backend struct{ k *kern }

func (b backend) Kind() string { return "cuda" }
func (b backend) Alloc(n int64) (device.Memory, error) {
	b.k.g.enter()
	var p uintptr
	if r := b.k.g.d.MemAlloc(&p, uintptr(n)); r != 0 {
		return device.Memory{}, fmt.Errorf("stub alloc %d", r)
	}
	return device.Memory{Ptr: p}, nil
}
func (b backend) Commit(m device.Memory, off, n int64) error { return nil }
func (b backend) Decommit(m device.Memory, off, n int64)     {}
func (b backend) Free(m device.Memory)                       { b.k.g.enter(); b.k.g.d.MemFree(m.Ptr) }
func (b backend) Kernels() device.Kernels                    { return b.k }

func Open(index int, o device.Options) (*device.Device, error) {
	lib, err := purego.Dlopen(os.Getenv("HEADROOM_LIBCUDA"), purego.RTLD_NOW|purego.RTLD_GLOBAL)
	if err != nil {
		return nil, err
	}
	g := &gpu{fns: map[string]uintptr{}}
	for sym, fn := range map[string]any{"cuInit": &g.d.Init, "cuDevicePrimaryCtxRetain": &g.d.PrimaryRetain,
		"cuCtxSetCurrent": &g.d.CtxSetCurrent, "cuCtxSynchronize": &g.d.CtxSync, "cuMemAlloc_v2": &g.d.MemAlloc,
		"cuMemFree_v2": &g.d.MemFree, "cuMemcpyHtoD_v2": &g.d.HtoD, "cuMemcpyDtoH_v2": &g.d.DtoH,
		"cuModuleLoadData": &g.d.ModuleLoadData, "cuModuleGetFunction": &g.d.GetFunction, "cuLaunchKernel": &g.d.Launch} {
		p, err := purego.Dlsym(lib, sym)
		if err != nil {
			return nil, err
		}
		purego.RegisterFunc(fn, p)
	}
	runtime.LockOSThread()
	g.d.Init(0)
	g.d.PrimaryRetain(&g.ctx, 0)
	g.d.CtxSetCurrent(g.ctx)
	rtc, err := icuda.LoadNVRTC()
	if err != nil {
		return nil, err
	}
	srcs := os.DirFS("kernels")
	headers := map[string][]byte{}
	ents, _ := fs.ReadDir(srcs, ".")
	for _, e := range ents {
		if b, _ := fs.ReadFile(srcs, e.Name()); len(e.Name()) > 4 && e.Name()[len(e.Name())-4:] == ".cuh" {
			headers[e.Name()] = b
		}
	}
	for _, e := range ents {
		n := e.Name()
		if len(n) < 3 || n[len(n)-3:] != ".cu" {
			continue
		}
		b, _ := fs.ReadFile(srcs, n)
		ptx, err := rtc.Compile(n, b, headers, "compute_90")
		if err != nil {
			return nil, err
		}
		ptx = append(ptx, 0)
		var m uintptr
		if r := g.d.ModuleLoadData(&m, &ptx[0]); r != 0 {
			return nil, fmt.Errorf("stub: module %s: %d", n, r)
		}
		g.mods = append(g.mods, m)
	}
	k := &kern{g: g}
	return device.New(fmt.Sprintf("cuda:%d", index), backend{k}, o), nil
}
