package cuda

import (
	"fmt"
	"math"
	"unsafe"

	"github.com/headroom-ml/headroom/device"
	"github.com/headroom-ml/headroom/dtype"
	"github.com/headroom-ml/headroom/internal/cuda"
)

// kern implements device.Kernels for one cuda device.
type kern struct{ g *gpu }

// Arg is one kernel parameter, encoded as the C value's bytes.
type Arg struct {
	size uint8 // bytes: 4 or 8, or 0 for a Layout
	v    uint64
	lay  layout // by value, so that an Arg needs no allocation
}

// layout is the kernels' `struct Layout` (common.cuh), by value.
type layout struct {
	shape, stride [8]int64
	rank          int32
	_             int32
}

// Ptr is the device address of o's first element (the block's address plus
// Off elements); 0 for a nil Block.
func (k *kern) Ptr(o device.Operand) Arg {
	if o.Block == nil {
		return Arg{size: 8}
	}
	return Arg{size: 8, v: uint64(o.Block.Ptr()) + uint64(o.Off)*uint64(o.DType.Size())}
}

// Int is a C int; it panics (a bug in the caller) when v does not fit.
func Int(v int) Arg {
	if v != int(int32(v)) {
		panic(fmt.Sprintf("cuda: kernel int parameter %d does not fit 32 bits", v))
	}
	return Arg{size: 4, v: uint64(uint32(int32(v)))}
}

// I64 is a C long long.
func I64(v int64) Arg { return Arg{size: 8, v: uint64(v)} }

// U64 is a C unsigned long long.
func U64(v uint64) Arg { return Arg{size: 8, v: v} }

// U32 is a C unsigned int.
func U32(v uint32) Arg { return Arg{size: 4, v: uint64(v)} }

// F32 is a C float.
func F32(v float32) Arg { return Arg{size: 4, v: uint64(math.Float32bits(v))} }

// F64 is a C double.
func F64(v float64) Arg { return Arg{size: 8, v: math.Float64bits(v)} }

// Lay is o's Layout by value (nil Strides: contiguous strides). It panics
// when the rank passes 8, which the kernels do not take.
func Lay(o device.Operand) Arg {
	if len(o.Shape) > 8 {
		panic(fmt.Sprintf("cuda: operand of rank %d: kernels take rank ≤ 8", len(o.Shape)))
	}
	var a Arg
	l := &a.lay
	l.rank = int32(len(o.Shape))
	st := int64(1)
	for i := len(o.Shape) - 1; i >= 0; i-- {
		l.shape[i] = int64(o.Shape[i])
		if o.Strides != nil {
			l.stride[i] = int64(o.Strides[i])
		} else {
			l.stride[i] = st
		}
		st *= int64(o.Shape[i])
	}
	return a
}

// Launch is a grid: Grid and Block sizes, and dynamic shared memory bytes.
type Launch struct {
	Grid, Block [3]uint32
	Shared      uint32
}

// maxGrid caps Linear's blocks; kernels use grid-stride loops.
const maxGrid = 65535

// Linear is a 1-D launch for n elements: 256 threads a block and enough
// blocks to give each thread one element, at most maxGrid blocks (at least 1).
func Linear(n int) Launch {
	b := (n + 255) / 256
	b = max(1, min(b, maxGrid))
	return Launch{Grid: [3]uint32{uint32(b), 1, 1}, Block: [3]uint32{256, 1, 1}}
}

// Suffix is the kernels' name suffix for a dtype: "f64", "f32", "f16",
// "bf16", "i8", "i32", "i64".
func Suffix(dt dtype.DType) string {
	switch dt {
	case dtype.F64:
		return "f64"
	case dtype.F32:
		return "f32"
	case dtype.F16:
		return "f16"
	case dtype.BF16:
		return "bf16"
	case dtype.I8:
		return "i8"
	case dtype.I32:
		return "i32"
	case dtype.I64:
		return "i64"
	}
	return "dtype" + dt.String()
}

// call is one queued launch: the kernel's name, its grid and its
// parameters encoded as the C values' bytes.
type call struct {
	fn   string
	l    Launch
	n    int
	offs [cuda.MaxParams]uint16
	buf  [cuda.MaxParamBytes]byte
}

// encode writes the parameters into c.
func (c *call) encode(args []Arg) {
	if len(args) > cuda.MaxParams {
		panic(fmt.Sprintf("cuda: kernel %s: %d parameters, at most %d", c.fn, len(args), cuda.MaxParams))
	}
	off := 0
	for i, a := range args {
		c.offs[i] = uint16(off)
		switch {
		case a.size == 0:
			*(*layout)(unsafe.Pointer(&c.buf[off])) = a.lay
			off += int(unsafe.Sizeof(layout{}))
		case a.size == 4:
			*(*uint32)(unsafe.Pointer(&c.buf[off])) = uint32(a.v)
			off += 8
		default:
			*(*uint64)(unsafe.Pointer(&c.buf[off])) = a.v
			off += 8
		}
		if off > len(c.buf) {
			panic(fmt.Sprintf("cuda: kernel %s: parameters pass %d bytes", c.fn, len(c.buf)))
		}
	}
	c.n = len(args)
}

// launch queues kernel fn on the device's stream and returns at once. An
// error of earlier queued work is raised here, as a *device.KernelError.
func (k *kern) launch(fn string, l Launch, args ...Arg) {
	g := k.g
	g.check()
	c := g.calls.Get().(*call)
	c.fn, c.l = fn, l
	c.encode(args)
	if !g.submit(task{launch: c}) {
		g.raise(fn, ErrClosed)
	}
}

var (
	_ device.Kernels = (*kern)(nil)
	_ device.Backend = (*backend)(nil)
	_ device.MemInfo = (*backend)(nil)
	_ device.Closer  = (*backend)(nil)
)
