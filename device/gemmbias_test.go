package device_test

import (
	"strings"
	"testing"

	"github.com/headroom-ml/headroom/device"
	"github.com/headroom-ml/headroom/device/cpu"
	"github.com/headroom-ml/headroom/dtype"
)

// TestGemmCheckBias checks that a bias of the wrong length, dtype, layout
// or device is refused with a message that names what is wrong, before the
// cpu device touches C.
func TestGemmCheckBias(t *testing.T) {
	d, other := cpu.New(0, device.Options{}), cpu.New(1, device.Options{})
	defer d.Close()
	defer other.Close()
	op := func(dev *device.Device, dt dtype.DType, n int) device.Operand {
		b, err := dev.Alloc(int64(n*dt.Size()), device.Label{Tag: device.Activation, Op: "test"})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(b.Release)
		return device.Operand{Block: b, DType: dt, Shape: []int{n}}
	}
	g := device.Gemm{M: 2, N: 3, K: 4, Alpha: 1, LdA: 4, LdB: 3, LdC: 3,
		A: op(d, dtype.F32, 8), B: op(d, dtype.F32, 12), C: op(d, dtype.F32, 6)}
	if err := g.CheckBias(); err != nil {
		t.Fatalf("no bias: %v", err)
	}
	strided := op(d, dtype.F32, 6)
	strided.Shape, strided.Strides = []int{3}, []int{2}
	past := op(d, dtype.F32, 3)
	past.Off = 1
	for _, tc := range []struct {
		bias device.Operand
		want string
	}{
		{op(d, dtype.F32, 2), "want 3 contiguous elements (N)"},
		{op(d, dtype.F64, 3), "dtype f64, want C's f32"},
		{op(other, dtype.F32, 3), "on another device than C"},
		{strided, "strides [2]"},
		{past, "elements [1, 4) outside its block of 12 bytes"},
	} {
		q := g
		q.Bias = tc.bias
		if err := q.CheckBias(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("bias %v: error %v, want %q", tc.bias.Shape, err, tc.want)
		}
		func() {
			defer func() {
				if msg, _ := recover().(string); !strings.HasPrefix(msg, "cpu: gemm bias: ") || !strings.Contains(msg, tc.want) {
					t.Errorf("cpu Gemm with bias %v: panic %q", tc.bias.Shape, msg)
				}
			}()
			d.Kernels().Gemm(q)
		}()
	}
}
