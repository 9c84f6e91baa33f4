package autograd_test

import (
	"math/rand/v2"
	"testing"

	"github.com/headroom-ml/headroom/autograd"
	"github.com/headroom-ml/headroom/device"
	"github.com/headroom-ml/headroom/device/cpu"
	"github.com/headroom-ml/headroom/device/meta"
	"github.com/headroom-ml/headroom/dtype"
)

type pool2 = [2]int

func maxPool(o autograd.PoolOptions) func(*autograd.Scope, []*autograd.Tensor) *autograd.Tensor {
	return func(_ *autograd.Scope, in []*autograd.Tensor) *autograd.Tensor { return autograd.MaxPool2d(in[0], o) }
}

func avgPool(o autograd.PoolOptions) func(*autograd.Scope, []*autograd.Tensor) *autograd.Tensor {
	return func(_ *autograd.Scope, in []*autograd.Tensor) *autograd.Tensor { return autograd.AvgPool2d(in[0], o) }
}

func adaptivePool(oh, ow int) func(*autograd.Scope, []*autograd.Tensor) *autograd.Tensor {
	return func(_ *autograd.Scope, in []*autograd.Tensor) *autograd.Tensor {
		return autograd.AdaptiveAvgPool2d(in[0], oh, ow)
	}
}

// Random floats have no ties, so MaxPool2d is differentiable at them.
func TestGradMaxPool2d(t *testing.T) {
	runGradCases(t, []gradCase{
		{name: "2x2", shapes: [][]int{{2, 3, 6, 6}}, f: maxPool(autograd.PoolOptions{Kernel: pool2{2, 2}})},
		{name: "k3_s2_pad1", shapes: [][]int{{1, 2, 7, 7}}, f: maxPool(autograd.PoolOptions{Kernel: pool2{3, 3}, Stride: pool2{2, 2}, Padding: pool2{1, 1}})},
		{name: "overlapping_stride1", shapes: [][]int{{2, 1, 5, 4}}, f: maxPool(autograd.PoolOptions{Kernel: pool2{2, 3}, Stride: pool2{1, 1}})},
		{name: "nonsquare_dilated", shapes: [][]int{{2, 1, 7, 6}}, f: maxPool(autograd.PoolOptions{Kernel: pool2{3, 2}, Stride: pool2{1, 2}, Padding: pool2{1, 1}, Dilation: pool2{2, 1}})},
		{name: "batch1_odd", shapes: [][]int{{1, 1, 5, 3}}, f: maxPool(autograd.PoolOptions{Kernel: pool2{2, 2}})},
		{name: "strided_input", shapes: [][]int{{2, 5, 4, 3}}, f: func(_ *autograd.Scope, in []*autograd.Tensor) *autograd.Tensor {
			return autograd.MaxPool2d(in[0].Permute(0, 3, 1, 2), autograd.PoolOptions{Kernel: pool2{2, 2}, Stride: pool2{1, 1}})
		}},
	})
}

func TestGradAvgPool2d(t *testing.T) {
	runGradCases(t, []gradCase{
		{name: "2x2", shapes: [][]int{{2, 3, 4, 6}}, f: avgPool(autograd.PoolOptions{Kernel: pool2{2, 2}})},
		{name: "k3_s2_pad1_countpad", shapes: [][]int{{1, 2, 7, 6}}, f: avgPool(autograd.PoolOptions{Kernel: pool2{3, 3}, Stride: pool2{2, 2}, Padding: pool2{1, 1}})},
		{name: "k3_s2_pad1_excludepad", shapes: [][]int{{1, 2, 7, 6}}, f: avgPool(autograd.PoolOptions{Kernel: pool2{3, 3}, Stride: pool2{2, 2}, Padding: pool2{1, 1}, ExcludePad: true})},
		{name: "nonsquare_stride_ne_kernel", shapes: [][]int{{2, 1, 5, 7}}, f: avgPool(autograd.PoolOptions{Kernel: pool2{2, 3}, Stride: pool2{1, 2}, Padding: pool2{1, 1}, ExcludePad: true})},
		{name: "dilated", shapes: [][]int{{1, 2, 6, 6}}, f: avgPool(autograd.PoolOptions{Kernel: pool2{2, 2}, Stride: pool2{1, 1}, Dilation: pool2{2, 3}})},
		{name: "batch1_odd", shapes: [][]int{{1, 1, 3, 5}}, f: avgPool(autograd.PoolOptions{Kernel: pool2{3, 1}})},
	})
}

func TestGradAdaptiveAvgPool2d(t *testing.T) {
	runGradCases(t, []gradCase{
		{name: "to_1x1", shapes: [][]int{{2, 3, 5, 4}}, f: adaptivePool(1, 1)},
		{name: "non_divisor", shapes: [][]int{{1, 2, 7, 5}}, f: adaptivePool(3, 4)},
		{name: "identity", shapes: [][]int{{1, 1, 3, 2}}, f: adaptivePool(3, 2)},
		{name: "larger_than_input", shapes: [][]int{{2, 1, 2, 3}}, f: adaptivePool(3, 5)},
	})
}

func TestPool2dDTypes(t *testing.T) {
	o := autograd.PoolOptions{Kernel: pool2{3, 2}, Stride: pool2{2, 1}, Padding: pool2{1, 1}}
	shapes := [][]int{{2, 3, 7, 5}}
	compareDTypes(t, shapes, func(in []*autograd.Tensor) *autograd.Tensor { return autograd.MaxPool2d(in[0], o) }, []int{2, 3, 4, 6})
	compareDTypes(t, shapes, func(in []*autograd.Tensor) *autograd.Tensor { return autograd.AvgPool2d(in[0], o) }, []int{2, 3, 4, 6})
	compareDTypes(t, shapes, func(in []*autograd.Tensor) *autograd.Tensor { return autograd.AdaptiveAvgPool2d(in[0], 3, 2) }, []int{2, 3, 3, 2})
}

// poolMem runs a pooling op on dev with x an activation requiring grad, and
// returns the stats before the op, after it, after backward and at the end.
func poolMem(t *testing.T, dev *device.Device, dt dtype.DType, xs []int, f func(*autograd.Tensor) *autograd.Tensor) []device.Stats {
	t.Helper()
	rng := rand.New(rand.NewPCG(2, 2))
	p := autograd.New(dev, dt, device.Parameter, xs...).SetRequiresGrad(true)
	p.SetFloat64s(randVals(rng, numelOf(xs)))
	s := autograd.NewScope()
	x := s.Use(p)
	dev.ResetPeak()
	st := []device.Stats{dev.Stats()}
	y := f(x)
	st = append(st, dev.Stats())
	if err := y.Sum(false).Backward(); err != nil {
		t.Fatal(err)
	}
	st = append(st, dev.Stats())
	s.Release()
	p.Release()
	st = append(st, dev.Stats())
	if n := dev.LiveBlocks(); n != 0 {
		t.Errorf("%s: %d blocks live: %v", dev.Name(), n, dev.Live())
	}
	return st
}

// TestPool2dMemory checks that each pooling op allocates exactly y
// (N·C·OH·OW elements) and saves nothing new (MaxPool2d saves x, which is
// alive anyway), and that meta accounts the same bytes as cpu.
func TestPool2dMemory(t *testing.T) {
	xs := []int{2, 3, 7, 5}
	o := autograd.PoolOptions{Kernel: pool2{3, 3}, Stride: pool2{2, 1}, Padding: pool2{1, 1}}
	cases := []struct {
		name   string
		dt     dtype.DType
		f      func(*autograd.Tensor) *autograd.Tensor
		oh, ow int
	}{
		{"max_f32", dtype.F32, func(x *autograd.Tensor) *autograd.Tensor { return autograd.MaxPool2d(x, o) }, 4, 5},
		{"max_bf16", dtype.BF16, func(x *autograd.Tensor) *autograd.Tensor { return autograd.MaxPool2d(x, o) }, 4, 5},
		{"avg_f64", dtype.F64, func(x *autograd.Tensor) *autograd.Tensor { return autograd.AvgPool2d(x, o) }, 4, 5},
		{"adaptive_f32", dtype.F32, func(x *autograd.Tensor) *autograd.Tensor { return autograd.AdaptiveAvgPool2d(x, 3, 2) }, 3, 2},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := poolMem(t, cpu.New(0, device.Options{}), c.dt, xs, c.f)
			before, after := got[0], got[1]
			yBytes := int64(xs[0]*xs[1]*c.oh*c.ow) * int64(c.dt.Size())
			if d := after.ByTag[device.Activation].Current - before.ByTag[device.Activation].Current; d != yBytes {
				t.Errorf("forward added %d activation bytes, want y = %d", d, yBytes)
			}
			if d := after.Requested.Peak - before.Requested.Current; d != yBytes {
				t.Errorf("forward peak %d above the start, want y = %d (nothing else, saved indices included)", d, yBytes)
			}
			if d := after.Requested.Current - before.Requested.Current; d != yBytes {
				t.Errorf("forward holds %d new bytes, want y = %d", d, yBytes)
			}
			sameStats(t, got, poolMem(t, meta.New(0, device.Options{}), c.dt, xs, c.f))
		})
	}
}

func TestPool2dBadInput(t *testing.T) {
	dev := cpu.New(0, device.Options{})
	x := autograd.Zeros(dev, dtype.F32, 2, 3, 5, 5)
	defer x.Release()
	k := func(h, w int) autograd.PoolOptions { return autograd.PoolOptions{Kernel: pool2{h, w}} }
	wantError(t, func() { autograd.MaxPool2d(x, autograd.PoolOptions{Kernel: pool2{3, 3}, Padding: pool2{2, 1}}) }, "max_pool2d", "padding [2 1]", "kernel [3 3]")
	wantError(t, func() { autograd.AvgPool2d(x, autograd.PoolOptions{}) }, "avg_pool2d", "kernel [0 0]", "[2 3 5 5]")
	wantError(t, func() { autograd.MaxPool2d(x, k(6, 2)) }, "max_pool2d", "[2 3 5 5]", "smaller")
	wantError(t, func() { autograd.AvgPool2d(x, autograd.PoolOptions{Kernel: pool2{2, 2}, Stride: pool2{-1, 1}}) }, "avg_pool2d", "stride [-1 1]")
	x3 := autograd.Zeros(dev, dtype.F32, 3, 5, 5)
	defer x3.Release()
	wantError(t, func() { autograd.MaxPool2d(x3, k(2, 2)) }, "max_pool2d", "[3 5 5]", "(N, C, H, W)")
	wantError(t, func() { autograd.AdaptiveAvgPool2d(x3, 1, 1) }, "adaptive_avg_pool2d", "[3 5 5]")
	wantError(t, func() { autograd.AdaptiveAvgPool2d(x, 0, 2) }, "adaptive_avg_pool2d", "[2 3 5 5]", "0×2")
}
