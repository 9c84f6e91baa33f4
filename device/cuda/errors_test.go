package cuda

import (
	"errors"
	"strings"
	"testing"

	"github.com/headroom-ml/headroom/device"
	"github.com/headroom-ml/headroom/dtype"
)

// TestBadOperands: operands a kernel cannot take raise a *device.KernelError
// naming the op and what was expected, before anything is launched.
func TestBadOperands(t *testing.T) {
	p := devices(t)
	f32 := p.put(t, dense(dtype.F32, 6), nil)
	f64 := p.put(t, dense(dtype.F64, 6), nil)
	i32 := p.put(t, dense(dtype.I32, 6), nil)
	strided := p.put(t, opnd{dt: dtype.F32, n: 12, shape: []int{6}, strides: []int{2}}, nil)
	k := p.gpu.Kernels()
	cases := []struct {
		name, want string
		call       func()
	}{
		{"sum_squares dst", "want one F64 element", func() { k.SumSquares(f32.gpu, f32.gpu) }},
		{"sum_squares strided", "not contiguous", func() {
			k.SumSquares(device.Operand{Block: f64.gpu.Block, DType: dtype.F64, Shape: []int{1}}, strided.gpu)
		}},
		{"binary dtypes", "operand dtypes", func() {
			k.Binary(device.Add, f32.gpu, f32.gpu, device.Operand{Block: f64.gpu.Block, Shape: []int{6}})
		}},
		{"adam int", "want F32 or F64", func() { k.AdamStep(i32.gpu, i32.gpu, i32.gpu, i32.gpu, device.AdamArgs{Step: 1}) }},
		{"sgd no buffer", "without a buffer", func() { k.SGDStep(f32.gpu, f32.gpu, device.Operand{}, device.SGDArgs{Momentum: 0.9}) }},
		{"reduce rank", "differ in rank", func() {
			k.Reduce(device.Sum, device.Operand{Block: f32.gpu.Block, DType: dtype.F32, Shape: []int{1}}, device.Operand{Block: f32.gpu.Block, DType: dtype.F32, Shape: []int{2, 3}}, 0)
		}},
		{"dropout p", "want 0 ≤ p ≤ 1", func() { k.Dropout(f32.gpu, f32.gpu, 1.5, 0, 0) }},
		{"copy shapes", "differ", func() { k.Copy(f32.gpu, device.Operand{Block: f64.gpu.Block, DType: dtype.F64, Shape: []int{2, 3}}) }},
	}
	for _, c := range cases {
		err := catch(c.call)
		var ke *device.KernelError
		if !errors.As(err, &ke) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: raised %v, want a *device.KernelError saying %q", c.name, err, c.want)
		}
	}
}

// catch runs f and returns what it panicked with, as an error.
func catch(f func()) (err error) {
	defer func() {
		if r := recover(); r != nil {
			if e, ok := r.(error); ok {
				err = e
				return
			}
			err = errors.New("non-error panic")
		}
	}()
	f()
	return nil
}
