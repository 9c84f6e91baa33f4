package cpu_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/headroom-ml/headroom/autograd"
	"github.com/headroom-ml/headroom/device"
	"github.com/headroom-ml/headroom/device/cpu"
	"github.com/headroom-ml/headroom/dtype"
)

// convRun runs Conv2d on the cpu device in dt, x and w leaves holding xv
// and wv, backpropagating dy, and returns y, dx and dw as float64.
func convRun(t *testing.T, dev *device.Device, dt dtype.DType, xs, wsh []int, xv, wv, dy []float64, o autograd.ConvOptions) [3][]float64 {
	t.Helper()
	s := autograd.NewScope()
	defer s.Release()
	x := autograd.New(dev, dt, device.Other, xs...)
	x.SetFloat64s(xv)
	w := autograd.New(dev, dt, device.Other, wsh...)
	w.SetFloat64s(wv)
	x.SetRequiresGrad(true)
	w.SetRequiresGrad(true)
	defer x.Release()
	defer w.Release()
	y := autograd.Conv2d(s.Use(x), s.Use(w), nil, o)
	if y.DType() != dt {
		t.Fatalf("output dtype %s, want %s", y.DType(), dt)
	}
	if err := y.BackwardWith(s.FromFloat64s(dev, y.Shape(), dy).Cast(dt)); err != nil {
		t.Fatal(err)
	}
	return [3][]float64{y.Float64s(), x.Grad().Float64s(), w.Grad().Float64s()}
}

// bf16Round rounds every value to bfloat16.
func bf16Round(v []float64) []float64 {
	out := make([]float64, len(v))
	for i, x := range v {
		out[i] = float64(dtype.BF16ToF32(dtype.BF16FromF32(float32(x))))
	}
	return out
}

func absAll(v []float64) []float64 {
	out := make([]float64, len(v))
	for i, x := range v {
		out[i] = math.Abs(x)
	}
	return out
}

// TestConv2dBF16 runs convolutions with BF16 operands (the 16-bit kernels:
// im2col over bfloat16, VDPBF16PS where the CPU has it) over the cases of
// autograd's conv tests (stride, padding, dilation, groups, depthwise,
// 1×1, strided 1×1) and compares y, dx and dw with F64 on the same
// bfloat16 values and with F32 (the widened path) rounded to BF16. Each
// element may differ by the rounding of a float32 sum of its n terms,
// 2(n+1)·2⁻²⁴·Σ|terms|, plus its own rounding to bfloat16 (2⁻⁸ relative,
// twice against F32, which rounds too).
func TestConv2dBF16(t *testing.T) {
	cases := []struct {
		name    string
		xs, wsh []int
		o       autograd.ConvOptions
	}{
		{"plain", []int{2, 3, 5, 5}, []int{4, 3, 3, 3}, autograd.ConvOptions{}},
		{"stride2_pad1", []int{2, 2, 6, 5}, []int{3, 2, 3, 3}, autograd.ConvOptions{Stride: [2]int{2, 2}, Padding: [2]int{1, 1}}},
		{"dilation2", []int{1, 2, 7, 6}, []int{2, 2, 3, 2}, autograd.ConvOptions{Dilation: [2]int{2, 2}, Padding: [2]int{2, 1}}},
		{"groups2", []int{2, 4, 5, 4}, []int{6, 2, 3, 3}, autograd.ConvOptions{Groups: 2, Padding: [2]int{1, 0}}},
		{"depthwise", []int{2, 3, 5, 5}, []int{6, 1, 3, 3}, autograd.ConvOptions{Groups: 3, Padding: [2]int{1, 1}}},
		{"pointwise", []int{2, 3, 4, 5}, []int{5, 3, 1, 1}, autograd.ConvOptions{}},
		{"pointwise_groups", []int{1, 4, 3, 3}, []int{4, 2, 1, 1}, autograd.ConvOptions{Groups: 2}},
		{"1x1_stride2", []int{1, 2, 5, 4}, []int{3, 2, 1, 1}, autograd.ConvOptions{Stride: [2]int{2, 2}}},
		{"nonsquare", []int{1, 2, 5, 7}, []int{3, 2, 2, 4}, autograd.ConvOptions{Stride: [2]int{1, 2}, Padding: [2]int{1, 0}}},
		{"batch1_odd", []int{1, 1, 7, 3}, []int{1, 1, 3, 1}, autograd.ConvOptions{Stride: [2]int{3, 1}}},
		{"everything", []int{2, 4, 9, 7}, []int{4, 2, 3, 2}, autograd.ConvOptions{Stride: [2]int{2, 3}, Padding: [2]int{1, 2}, Dilation: [2]int{2, 1}, Groups: 2}},
		{"resnet_like", []int{2, 16, 8, 8}, []int{16, 16, 3, 3}, autograd.ConvOptions{Padding: [2]int{1, 1}}},
	}
	dev := cpu.New(0, device.Options{})
	defer dev.Close()
	rng := rand.New(rand.NewPCG(21, 22))
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			xv := bf16Round(randFloats(rng, prod(c.xs)))
			wv := bf16Round(randFloats(rng, prod(c.wsh)))
			dy := bf16Round(randFloats(rng, outLen(c.xs, c.wsh, c.o)))
			ref := convRun(t, dev, dtype.F64, c.xs, c.wsh, xv, wv, dy, c.o)
			mag := convRun(t, dev, dtype.F64, c.xs, c.wsh, absAll(xv), absAll(wv), absAll(dy), c.o)
			f32 := convRun(t, dev, dtype.F32, c.xs, c.wsh, xv, wv, dy, c.o)
			got := convRun(t, dev, dtype.BF16, c.xs, c.wsh, xv, wv, dy, c.o)
			g := max(c.o.Groups, 1)
			terms := [3]int{prod(c.wsh[1:]), c.wsh[0] / g * c.wsh[2] * c.wsh[3], len(dy) / c.wsh[0]}
			for k, name := range []string{"y", "dx", "dw"} {
				for i, want := range ref[k] {
					acc := 2 * float64(terms[k]+1) * 0x1p-24 * mag[k][i]
					if d := math.Abs(got[k][i] - want); !(d <= acc+0x1p-8*math.Abs(want)) {
						t.Fatalf("%s[%d] = %v, want %v (F64) ± %v", name, i, got[k][i], want, acc+0x1p-8*math.Abs(want))
					}
					w32 := f32[k][i]
					if d := math.Abs(got[k][i] - w32); !(d <= 2*acc+0x1p-7*math.Abs(w32)) {
						t.Fatalf("%s[%d] = %v, want %v (F32) ± %v", name, i, got[k][i], w32, 2*acc+0x1p-7*math.Abs(w32))
					}
				}
			}
		})
	}
	if n := dev.LiveBlocks(); n != 0 {
		t.Errorf("%d blocks live: %v", n, fmt.Sprint(dev.Live()))
	}
}

// outLen is the number of elements of the convolution's output.
func outLen(xs, wsh []int, o autograd.ConvOptions) int {
	n := xs[0] * wsh[0]
	for i := range 2 {
		st, dl := max(o.Stride[i], 1), max(o.Dilation[i], 1)
		n *= (xs[2+i]+2*o.Padding[i]-dl*(wsh[2+i]-1)-1)/st + 1
	}
	return n
}

func randFloats(rng *rand.Rand, n int) []float64 {
	v := make([]float64, n)
	for i := range v {
		v[i] = 2*rng.Float64() - 1
	}
	return v
}

func prod(s []int) int {
	n := 1
	for _, v := range s {
		n *= v
	}
	return n
}
