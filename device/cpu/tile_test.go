package cpu_test

import (
	"math/rand/v2"
	"testing"

	"github.com/headroom-ml/headroom/device"
	"github.com/headroom-ml/headroom/device/cpu"
	"github.com/headroom-ml/headroom/dtype"
)

// pair is one operand held twice: in BF16, and widened exactly to F32.
type pair struct{ half, f32 device.Operand }

func newPair(d *device.Device, r *rand.Rand, shape []int) pair {
	n := 1
	for _, s := range shape {
		n *= s
	}
	v := make([]float64, n)
	for i := range v {
		v[i] = 2*r.Float64() - 1
	}
	mk := func(dt dtype.DType) device.Operand {
		b := d.MustAlloc(int64(n*dt.Size()), device.Label{Tag: device.Activation})
		dtype.FromF64(dt, b.Bytes(), v)
		return device.Operand{Block: b, DType: dt, Shape: shape}
	}
	p := pair{half: mk(dtype.BF16), f32: mk(dtype.F32)}
	p.sync()
	return p
}

// sync makes the F32 copy hold exactly the BF16 values again.
func (p pair) sync() {
	dtype.ToF32(dtype.AsF32(p.f32.Block.Bytes()), dtype.BF16, p.half.Block.Bytes())
}

// same checks that the BF16 output equals the F32 output rounded to BF16.
func (p pair) same(t *testing.T, what string) {
	t.Helper()
	n := p.half.Len()
	want := make([]byte, 2*n)
	dtype.FromF32(dtype.BF16, want, dtype.AsF32(p.f32.Block.Bytes())[:n])
	if i := firstDiff(want, p.half.Block.Bytes()[:2*n]); i >= 0 {
		t.Errorf("%s: BF16 element %d differs from the F32 kernel's result rounded to BF16", what, i/2)
	}
}

// TestTiledKernelsMatchF32: the tiled BF16 kernels, over many tiles (rows
// of 100 in groups of 40, a broadcast and a transposed operand), give the
// F32 kernels' results on the widened inputs, rounded to BF16, bit for bit.
func TestTiledKernelsMatchF32(t *testing.T) {
	d := cpu.New(0, device.Options{})
	k := d.Kernels()
	r := rand.New(rand.NewPCG(21, 22))
	const rows, cols = 300, 100
	x, y, dy := newPair(d, r, []int{rows, cols}), newPair(d, r, []int{rows, cols}), newPair(d, r, []int{rows, cols})
	w, b := newPair(d, r, []int{cols}), newPair(d, r, []int{cols})
	stat := func() device.Operand {
		return device.Operand{Block: d.MustAlloc(4*rows, device.Label{}), DType: dtype.F32, Shape: []int{rows}}
	}
	mean, rstd := stat(), stat()
	k.LayerNorm(y.half, mean, rstd, x.half, w.half, b.half, rows, cols, 1e-5)
	k.LayerNorm(y.f32, mean, rstd, x.f32, w.f32, b.f32, rows, cols, 1e-5)
	y.same(t, "LayerNorm")
	k.Softmax(y.half, x.half, rows, cols, true)
	k.Softmax(y.f32, x.f32, rows, cols, true)
	y.same(t, "LogSoftmax")
	y.sync()
	k.SoftmaxGrad(dy.half, x.half, y.half, rows, cols, true)
	k.SoftmaxGrad(dy.f32, x.f32, y.f32, rows, cols, true)
	dy.same(t, "SoftmaxGrad")
	// y = x·bias (bias broadcast over rows) + a transposed view.
	wb := func(o device.Operand) device.Operand {
		o.Shape, o.Strides = []int{rows, cols}, []int{0, 1}
		return o
	}
	k.Binary(device.Mul, y.half, x.half, wb(w.half))
	k.Binary(device.Mul, y.f32, x.f32, wb(w.f32))
	y.same(t, "Mul with a broadcast row")
	sq := newPair(d, r, []int{cols, cols})
	tr := func(o device.Operand) device.Operand {
		o.Strides = []int{1, cols}
		return o
	}
	out := newPair(d, r, []int{cols, cols})
	k.Binary(device.Sub, out.half, sq.half, tr(sq.half))
	k.Binary(device.Sub, out.f32, sq.f32, tr(sq.f32))
	out.same(t, "Sub of a transposed view")
	k.Unary(device.Exp, out.half, tr(sq.half), 0)
	k.Unary(device.Exp, out.f32, tr(sq.f32), 0)
	out.same(t, "Exp of a transposed view")
}
