package cuda

import (
	"fmt"
	"math"
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/headroom-ml/headroom/device"
	"github.com/headroom-ml/headroom/device/cpu"
	"github.com/headroom-ml/headroom/dtype"
)

// The kernel tests run each method on the cpu device and on a cuda device
// over the host emulator (TestMain: emu.Build of Sources(), the real NVRTC)
// with the same operands, and compare every byte of the output blocks:
// exactly, or within a tolerance for the ops whose float math differs
// between Go's math package and CUDA's built-ins.

var (
	emuOnce sync.Once
	emuDev  *device.Device
	emuErr  error
)

// pair is the cpu device and the emulated cuda device.
type pair struct{ cpu, gpu *device.Device }

func devices(t *testing.T) pair {
	t.Helper()
	emuOnce.Do(func() { emuDev, emuErr = Open(0, device.Options{}) }) // the emulator: see TestMain
	if emuErr != nil {
		t.Fatalf("emulated cuda device: %v", emuErr)
	}
	return pair{cpu.New(0, device.Options{}), emuDev}
}

// opnd describes one operand of a test: its dtype, block length in
// elements, and the view (offset, shape, strides; nil strides contiguous).
type opnd struct {
	dt      dtype.DType
	n       int
	off     int
	shape   []int
	strides []int
}

// dense is a contiguous operand of shape with no offset.
func dense(dt dtype.DType, shape ...int) opnd {
	n := 1
	for _, s := range shape {
		n *= s
	}
	return opnd{dt: dt, n: n, shape: shape}
}

// twin holds an operand's blocks on both devices.
type twin struct {
	spec     opnd
	cpu, gpu device.Operand
}

// put allocates o on both devices and writes the same raw bytes.
func (p pair) put(t *testing.T, o opnd, raw []byte) twin {
	t.Helper()
	if raw == nil {
		raw = make([]byte, o.n*o.dt.Size())
	}
	n := int64(max(len(raw), 1))
	tw := twin{spec: o}
	for i, d := range []*device.Device{p.cpu, p.gpu} {
		b, err := d.Alloc(n, device.Label{Tag: device.Activation})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(b.Release)
		whole := device.Operand{Block: b, DType: o.dt, Shape: []int{o.n}}
		d.Kernels().Write(whole, raw)
		op := device.Operand{Block: b, Off: o.off, DType: o.dt, Shape: o.shape, Strides: o.strides}
		if i == 0 {
			tw.cpu = op
		} else {
			tw.gpu = op
		}
	}
	return tw
}

// nilTwin is an absent operand on both devices.
func nilTwin(dt dtype.DType) twin {
	return twin{spec: opnd{dt: dt}, cpu: device.Operand{DType: dt}, gpu: device.Operand{DType: dt}}
}

// read returns the whole block of tw from each device.
func (p pair) read(tw twin) (c, g []byte) {
	c = make([]byte, tw.spec.n*tw.spec.dt.Size())
	g = make([]byte, len(c))
	whole := func(o device.Operand) device.Operand {
		return device.Operand{Block: o.Block, DType: o.DType, Shape: []int{tw.spec.n}}
	}
	p.cpu.Kernels().Read(c, whole(tw.cpu))
	p.gpu.Kernels().Read(g, whole(tw.gpu))
	return c, g
}

// values returns n random raw elements of dt: normal floats with some
// special values (specials true), or integers.
func values(r *rand.Rand, dt dtype.DType, n int, specials bool) []byte {
	v := make([]float64, n)
	sp := []float64{math.NaN(), math.Inf(1), math.Inf(-1), math.Copysign(0, -1), 0, 1e10, -1e10, 65504, 65520, -65519,
		3e-8, -6e-5, 127.9, -128.5, 300, -2.5, 0.5, 1.5, 2147483647, -2147483649, 9.3e18, -9.3e18, 3.4e38, 1e-40}
	for i := range v {
		switch {
		case !dt.IsFloat():
			v[i] = float64(r.IntN(201) - 100)
			if specials && r.IntN(4) == 0 {
				v[i] = sp[r.IntN(len(sp))]
			}
		case specials && r.IntN(3) == 0:
			v[i] = sp[r.IntN(len(sp))]
		default:
			v[i] = r.NormFloat64() * 2
		}
	}
	b := make([]byte, n*dt.Size())
	dtype.FromF64(dt, b, v)
	return b
}

// positive returns n random raw floats in (0.05, 4].
func positive(r *rand.Rand, dt dtype.DType, n int) []byte {
	v := make([]float64, n)
	for i := range v {
		v[i] = 0.05 + 3.95*r.Float64()
	}
	b := make([]byte, n*dt.Size())
	dtype.FromF64(dt, b, v)
	return b
}

// tolerance is the relative tolerance of a float op computed with
// different math libraries: a few ulps of F64 and F32, one step of the
// 16-bit formats (a float result one ulp apart can round either way).
func tolerance(dt dtype.DType) float64 {
	switch dt {
	case dtype.F64:
		return 1e-12
	case dtype.F32:
		return 5e-7
	case dtype.F16:
		return 2e-3
	case dtype.BF16:
		return 1.6e-2
	}
	return 0
}

// exact compares two blocks of dt byte for byte.
func exact(t *testing.T, what string, dt dtype.DType, c, g []byte) {
	t.Helper()
	sz := dt.Size()
	bad := 0
	for i := 0; i < len(c)/sz; i++ {
		if string(c[i*sz:(i+1)*sz]) != string(g[i*sz:(i+1)*sz]) {
			if bad++; bad <= 5 {
				t.Errorf("%s: element %d: cuda %s, cpu %s", what, i, show(dt, g[i*sz:(i+1)*sz]), show(dt, c[i*sz:(i+1)*sz]))
			}
		}
	}
	if bad > 5 {
		t.Errorf("%s: %d elements differ in all", what, bad)
	}
}

// near compares two blocks of dt within relative tolerance tol (and the
// same tolerance absolutely, for results near 0); NaN matches NaN.
func near(t *testing.T, what string, dt dtype.DType, c, g []byte, tol float64) {
	t.Helper()
	n := len(c) / dt.Size()
	cv, gv := make([]float64, n), make([]float64, n)
	dtype.ToF64(cv, dt, c)
	dtype.ToF64(gv, dt, g)
	bad := 0
	for i := range cv {
		a, b := cv[i], gv[i]
		ok := a == b || (a != a && b != b) || math.Abs(a-b) <= tol*math.Max(1, math.Max(math.Abs(a), math.Abs(b)))
		if !ok {
			if bad++; bad <= 5 {
				t.Errorf("%s: element %d: cuda %v, cpu %v (tolerance %g)", what, i, b, a, tol)
			}
		}
	}
	if bad > 5 {
		t.Errorf("%s: %d elements differ in all", what, bad)
	}
}

func show(dt dtype.DType, b []byte) string {
	v := make([]float64, 1)
	dtype.ToF64(v, dt, b)
	return fmt.Sprintf("%v (bytes %x)", v[0], b)
}

// layoutCase is an output shape with the views of a source and of the
// destination over their blocks.
type layoutCase struct {
	name   string
	shape  []int
	srcN   int // source block elements
	srcOff int
	srcStr []int
	dstN   int
	dstOff int
	dstStr []int
}

// layoutCases covers the dense fast path, a transpose, a broadcast, a
// strided destination with an offset, a scalar, and a rank above 8 that
// only fits after merging.
var layoutCases = []layoutCase{
	{name: "dense", shape: []int{3, 5}, srcN: 15, dstN: 15},
	{name: "transposed", shape: []int{4, 3}, srcN: 12, srcStr: []int{1, 4}, dstN: 12},
	{name: "broadcast", shape: []int{2, 3, 4}, srcN: 13, srcOff: 1, srcStr: []int{0, 4, 1}, dstN: 24},
	{name: "strided-dst", shape: []int{3, 4}, srcN: 12, dstN: 26, dstOff: 2, dstStr: []int{8, 2}},
	{name: "scalar", shape: []int{}, srcN: 3, srcOff: 2, dstN: 2, dstOff: 1},
	{name: "rank9", shape: []int{1, 2, 1, 3, 1, 1, 2, 1, 1}, srcN: 12, dstN: 12},
	{name: "odd", shape: []int{5, 7, 3}, srcN: 5 * 7 * 6, srcStr: []int{42, 6, 2}, dstN: 105},
}

func (c layoutCase) src(dt dtype.DType) opnd {
	return opnd{dt: dt, n: c.srcN, off: c.srcOff, shape: c.shape, strides: c.srcStr}
}

func (c layoutCase) dst(dt dtype.DType) opnd {
	return opnd{dt: dt, n: c.dstN, off: c.dstOff, shape: c.shape, strides: c.dstStr}
}

func allDTypes() []dtype.DType {
	return []dtype.DType{dtype.F64, dtype.F32, dtype.F16, dtype.BF16, dtype.I8, dtype.I32, dtype.I64}
}

func floatDTypes() []dtype.DType { return []dtype.DType{dtype.F64, dtype.F32, dtype.F16, dtype.BF16} }
