package cpu_test

import (
	"math/rand/v2"
	"testing"

	"github.com/headroom-ml/headroom/device"
	"github.com/headroom-ml/headroom/device/cpu"
	"github.com/headroom-ml/headroom/dtype"
)

// halfRig makes operands on one device for TestInRegisterMatchesTiles.
type halfRig struct {
	d *device.Device
	r *rand.Rand
}

// operand returns a new operand of dt and shape holding random values
// (some negative, some zero).
func (h halfRig) operand(dt dtype.DType, shape ...int) device.Operand {
	n := 1
	for _, s := range shape {
		n *= s
	}
	v := make([]float64, n)
	for i := range v {
		if i%11 != 0 {
			v[i] = 3 * h.r.NormFloat64()
		}
	}
	b := h.d.MustAlloc(int64(n*dt.Size()), device.Label{Tag: device.Activation})
	dtype.FromF64(dt, b.Bytes(), v)
	return device.Operand{Block: b, DType: dt, Shape: shape}
}

// twice runs f once with the in-register kernels and once on the tile
// path, on the same inputs, and reports the first output (outs indexes
// f's operands) whose bytes differ.
func twice(t *testing.T, what string, ops []device.Operand, outs []int, f func(ops []device.Operand)) {
	t.Helper()
	saved := make([][]byte, len(ops))
	for i, o := range ops {
		saved[i] = append([]byte(nil), o.Block.Bytes()...)
	}
	var got [][]byte
	for _, on := range []bool{true, false} {
		for i, o := range ops {
			copy(o.Block.Bytes(), saved[i])
		}
		restore := cpu.SetInRegister(on)
		f(ops)
		restore()
		for j, i := range outs {
			b := ops[i].Block.Bytes()
			if on {
				got = append(got, append([]byte(nil), b...))
			} else if k := firstDiff(got[j], b); k >= 0 {
				t.Errorf("%s: output %d byte %d differs from the tile path", what, i, k)
			}
		}
	}
}

// TestInRegisterMatchesTiles: ReLU and its gradient (BF16, F16), BF16
// GELU (tanh) and its gradient, BF16 add, sub, mul and axpy (and axpy into F32 by tiles), and BF16 batch norm forward (train, eval) and
// backward give, through the in-register kernels, the bytes of the tile
// path (widen to F32, the F32 kernel, round back).
func TestInRegisterMatchesTiles(t *testing.T) {
	d := cpu.New(0, device.Options{})
	k := d.Kernels()
	h := halfRig{d, rand.New(rand.NewPCG(3, 4))}
	shape := []int{4, 6, 5, 7}
	for _, dt := range []dtype.DType{dtype.BF16, dtype.F16} {
		x, y, dy, dx := h.operand(dt, shape...), h.operand(dt, shape...), h.operand(dt, shape...), h.operand(dt, shape...)
		twice(t, dt.String()+" relu", []device.Operand{y, x}, []int{0}, func(o []device.Operand) {
			k.Unary(device.Relu, o[0], o[1], 0)
		})
		twice(t, dt.String()+" relu grad", []device.Operand{dx, dy, x, y}, []int{0}, func(o []device.Operand) {
			k.UnaryGrad(device.Relu, o[0], o[1], o[2], o[3], 0)
		})
	}
	a, b, c := h.operand(dtype.BF16, shape...), h.operand(dtype.BF16, shape...), h.operand(dtype.BF16, shape...)
	twice(t, "bf16 gelu", []device.Operand{c, a}, []int{0}, func(o []device.Operand) {
		k.Unary(device.GeluTanh, o[0], o[1], 0)
	})
	twice(t, "bf16 gelu grad", []device.Operand{c, b, a}, []int{0}, func(o []device.Operand) {
		k.UnaryGrad(device.GeluTanh, o[0], o[1], o[2], device.Operand{}, 0)
	})
	for _, op := range []device.BinaryOp{device.Add, device.Sub, device.Mul} {
		twice(t, "bf16 binary", []device.Operand{c, a, b}, []int{0}, func(o []device.Operand) {
			k.Binary(op, o[0], o[1], o[2])
		})
	}
	// Axpy: BF16 into BF16 (in registers), BF16 and a transposed BF16
	// view into F32 (tiles), against widening both whole.
	y32 := h.operand(dtype.F32, shape...)
	tr := a
	tr.Shape, tr.Strides = []int{4, 6, 7, 5}, []int{210, 35, 1, 7}
	twice(t, "bf16 axpy", []device.Operand{c, a}, []int{0}, func(o []device.Operand) { k.Axpy(-0.3, o[1], o[0]) })
	twice(t, "bf16 axpy into f32", []device.Operand{y32, a}, []int{0}, func(o []device.Operand) { k.Axpy(1.7, o[1], o[0]) })
	twice(t, "strided bf16 axpy into f32", []device.Operand{y32, tr}, []int{0}, func(o []device.Operand) { k.Axpy(1.7, o[1], o[0]) })
	f32 := func(n int) device.Operand { return h.operand(dtype.F32, n) }
	ch := shape[1]
	x, y := h.operand(dtype.BF16, shape...), h.operand(dtype.BF16, shape...)
	w, bias, mean, invstd, rm := f32(ch), f32(ch), f32(ch), f32(ch), f32(ch)
	rv := h.operand(dtype.F32, ch)
	dtype.FromF64(dtype.F32, rv.Block.Bytes(), []float64{1, 2, 0.5, 3, 1.5, 0.25})
	for _, training := range []bool{true, false} {
		twice(t, "bf16 batch norm", []device.Operand{y, mean, invstd, x, w, bias, rm, rv}, []int{0, 1, 2, 6, 7}, func(o []device.Operand) {
			k.BatchNorm(o[0], o[1], o[2], o[3], o[4], o[5], o[6], o[7], 4, ch, 35, training, 0.1, 1e-5)
		})
		dx, dy, dw, db := h.operand(dtype.BF16, shape...), h.operand(dtype.BF16, shape...), f32(ch), f32(ch)
		twice(t, "bf16 batch norm grad", []device.Operand{dx, dw, db, dy, x, w, mean, invstd}, []int{0, 1, 2}, func(o []device.Operand) {
			k.BatchNormGrad(o[0], o[1], o[2], o[3], o[4], o[5], o[6], o[7], 4, ch, 35, training)
		})
	}
}

// TestBatchNormBF16HeapIsBounded: BF16 batch norm forward and backward on
// 2^18 elements allocate no float32 copy of x, y, dy or dx (the tile path
// took 4 bytes per element of each, 5 MiB here): at most what the F32
// calls allocate plus 1 KiB (the per-channel operands' copies and the
// calls' fixed overhead).
func TestBatchNormBF16HeapIsBounded(t *testing.T) {
	d := cpu.New(0, device.Options{})
	k := d.Kernels()
	h := halfRig{d, rand.New(rand.NewPCG(5, 6))}
	const n, c, hw = 8, 32, 1024
	f32 := func() device.Operand { return h.operand(dtype.F32, c) }
	w, bias, mean, invstd, rm, dw, db := f32(), f32(), f32(), f32(), f32(), f32(), f32()
	rv := f32()
	k.Fill(rv, 1)
	step := func(dt dtype.DType) func() {
		x, y, dy, dx := h.operand(dt, n, c, hw), h.operand(dt, n, c, hw), h.operand(dt, n, c, hw), h.operand(dt, n, c, hw)
		return func() {
			k.BatchNorm(y, mean, invstd, x, w, bias, rm, rv, n, c, hw, true, 0.1, 1e-5)
			k.BatchNormGrad(dx, dw, db, dy, x, w, mean, invstd, n, c, hw, true)
		}
	}
	base := heapPerRun(4, step(dtype.F32))
	got := heapPerRun(4, step(dtype.BF16))
	t.Logf("Go heap per batch norm forward+backward of %d elements: BF16 %.0f bytes, F32 %.0f", n*c*hw, got, base)
	if bound := base + 1024; got > bound {
		t.Errorf("BF16 batch norm: %.0f bytes of Go heap per forward+backward, want ≤ %.0f (F32 %.0f + 1 KiB)", got, bound, base)
	}
}
