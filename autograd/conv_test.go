package autograd_test

import (
	"errors"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/headroom-ml/headroom/autograd"
	"github.com/headroom-ml/headroom/autograd/autogradtest"
	"github.com/headroom-ml/headroom/device"
	"github.com/headroom-ml/headroom/device/cpu"
	"github.com/headroom-ml/headroom/device/meta"
	"github.com/headroom-ml/headroom/dtype"
)

func conv(o autograd.ConvOptions) func(*autograd.Scope, []*autograd.Tensor) *autograd.Tensor {
	return func(_ *autograd.Scope, in []*autograd.Tensor) *autograd.Tensor {
		var b *autograd.Tensor
		if len(in) > 2 {
			b = in[2]
		}
		return autograd.Conv2d(in[0], in[1], b, o)
	}
}

func TestGradConv2d(t *testing.T) {
	runGradCases(t, []gradCase{
		{name: "plain", shapes: [][]int{{2, 3, 5, 5}, {4, 3, 3, 3}, {4}}, f: conv(autograd.ConvOptions{})},
		{name: "stride2_pad1", shapes: [][]int{{2, 2, 6, 5}, {3, 2, 3, 3}, {3}}, f: conv(autograd.ConvOptions{Stride: [2]int{2, 2}, Padding: [2]int{1, 1}})},
		{name: "dilation2", shapes: [][]int{{1, 2, 7, 6}, {2, 2, 3, 2}}, f: conv(autograd.ConvOptions{Dilation: [2]int{2, 2}, Padding: [2]int{2, 1}})},
		{name: "groups2", shapes: [][]int{{2, 4, 5, 4}, {6, 2, 3, 3}, {6}}, f: conv(autograd.ConvOptions{Groups: 2, Padding: [2]int{1, 0}})},
		{name: "depthwise", shapes: [][]int{{2, 3, 5, 5}, {6, 1, 3, 3}, {6}}, f: conv(autograd.ConvOptions{Groups: 3, Padding: [2]int{1, 1}})},
		{name: "pointwise", shapes: [][]int{{2, 3, 4, 5}, {5, 3, 1, 1}, {5}}, f: conv(autograd.ConvOptions{})},
		{name: "pointwise_groups", shapes: [][]int{{1, 4, 3, 3}, {4, 2, 1, 1}}, f: conv(autograd.ConvOptions{Groups: 2})},
		{name: "1x1_stride2", shapes: [][]int{{1, 2, 5, 4}, {3, 2, 1, 1}, {3}}, f: conv(autograd.ConvOptions{Stride: [2]int{2, 2}})},
		{name: "nonsquare", shapes: [][]int{{1, 2, 5, 7}, {3, 2, 2, 4}, {3}}, f: conv(autograd.ConvOptions{Stride: [2]int{1, 2}, Padding: [2]int{1, 0}})},
		{name: "batch1_odd", shapes: [][]int{{1, 1, 7, 3}, {1, 1, 3, 1}}, f: conv(autograd.ConvOptions{Stride: [2]int{3, 1}})},
		{name: "everything", shapes: [][]int{{2, 4, 9, 7}, {4, 2, 3, 2}, {4}}, f: conv(autograd.ConvOptions{Stride: [2]int{2, 3}, Padding: [2]int{1, 2}, Dilation: [2]int{2, 1}, Groups: 2})},
		{name: "strided_input", shapes: [][]int{{2, 5, 4, 3}, {2, 3, 2, 2}}, f: func(_ *autograd.Scope, in []*autograd.Tensor) *autograd.Tensor {
			return autograd.Conv2d(in[0].Permute(0, 3, 1, 2), in[1], nil, autograd.ConvOptions{})
		}},
		{name: "reuse", shapes: [][]int{{1, 2, 4, 4}, {2, 2, 3, 3}}, f: func(_ *autograd.Scope, in []*autograd.Tensor) *autograd.Tensor {
			y := autograd.Conv2d(in[0], in[1], nil, autograd.ConvOptions{Padding: [2]int{1, 1}})
			return autograd.Conv2d(y, in[1], nil, autograd.ConvOptions{}) // x and w feed two convolutions
		}},
	})
}

func randVals(rng *rand.Rand, n int) []float64 {
	v := make([]float64, n)
	for i := range v {
		v[i] = 2*rng.Float64() - 1
	}
	return v
}

func numelOf(shape []int) int {
	n := 1
	for _, s := range shape {
		n *= s
	}
	return n
}

// leaf makes a free-standing leaf of dtype dt holding v, requiring grad.
func leaf(dev *device.Device, dt dtype.DType, shape []int, v []float64) *autograd.Tensor {
	t := autograd.New(dev, dt, device.Other, shape...)
	t.SetFloat64s(v)
	return t.SetRequiresGrad(true)
}

// runDType runs f on leaves of dtype dt holding vals and backpropagates dy;
// it returns the output and the inputs' gradients as float64.
func runDType(t *testing.T, dt dtype.DType, shapes [][]int, vals [][]float64, dy []float64,
	f func(in []*autograd.Tensor) *autograd.Tensor) (y []float64, grads [][]float64) {
	t.Helper()
	dev := cpu.New(0, device.Options{})
	s := autograd.NewScope()
	var in, used []*autograd.Tensor
	for i, sh := range shapes {
		l := leaf(dev, dt, sh, vals[i])
		in = append(in, l)
		used = append(used, s.Use(l))
	}
	out := f(used)
	if out.DType() != dt {
		t.Fatalf("output dtype %s, want %s", out.DType(), dt)
	}
	y = out.Float64s()
	g := s.FromFloat64s(dev, out.Shape(), dy).Cast(dt)
	if err := out.BackwardWith(g); err != nil {
		t.Fatal(err)
	}
	s.Release()
	for _, l := range in {
		grads = append(grads, l.Grad().Float64s())
		l.Release()
	}
	if n := dev.LiveBlocks(); n != 0 {
		t.Errorf("%d blocks live after the run: %v", n, dev.Live())
	}
	return y, grads
}

// compareDTypes checks that f in F32 and in F16 (computed in F32, stored in
// 2 bytes) agrees with F64, forward and backward.
func compareDTypes(t *testing.T, shapes [][]int, f func(in []*autograd.Tensor) *autograd.Tensor, outShape []int) {
	t.Helper()
	rng := rand.New(rand.NewPCG(11, 12))
	var vals [][]float64
	for _, sh := range shapes {
		vals = append(vals, randVals(rng, numelOf(sh)))
	}
	dy := randVals(rng, numelOf(outShape))
	ry, rg := runDType(t, dtype.F64, shapes, vals, dy, f)
	for _, c := range []struct {
		dt  dtype.DType
		tol float64
	}{{dtype.F32, 1e-5}, {dtype.F16, 2e-2}} {
		y, g := runDType(t, c.dt, shapes, vals, dy, f)
		scale := 1 + autogradtest.MaxAbs(ry)
		if d := autogradtest.MaxDiff(y, ry); d > c.tol*scale {
			t.Errorf("%s forward differs from F64 by %.3g", c.dt, d)
		}
		for i := range g {
			if d := autogradtest.MaxDiff(g[i], rg[i]); d > c.tol*(1+autogradtest.MaxAbs(rg[i])) {
				t.Errorf("%s gradient of input %d differs from F64 by %.3g", c.dt, i, d)
			}
		}
	}
}

func TestConv2dDTypes(t *testing.T) {
	o := autograd.ConvOptions{Stride: [2]int{2, 1}, Padding: [2]int{1, 1}, Groups: 2}
	compareDTypes(t, [][]int{{2, 4, 6, 5}, {6, 2, 3, 3}, {6}}, func(in []*autograd.Tensor) *autograd.Tensor {
		return autograd.Conv2d(in[0], in[1], in[2], o)
	}, []int{2, 6, 3, 5})
	compareDTypes(t, [][]int{{2, 4, 3, 3}, {5, 4, 1, 1}}, func(in []*autograd.Tensor) *autograd.Tensor {
		return autograd.Conv2d(in[0], in[1], nil, autograd.ConvOptions{})
	}, []int{2, 5, 3, 3})
}

// convMem runs Conv2d on dev with x an input of the step (not requiring
// grad) and w, b parameters, and returns the stats before the op, after it,
// after backward and after the scope's release.
func convMem(t *testing.T, dev *device.Device, dt dtype.DType, xs, wsh []int, o autograd.ConvOptions) []device.Stats {
	t.Helper()
	rng := rand.New(rand.NewPCG(1, 1))
	w := autograd.Param(dev, dt, "w", wsh...)
	w.SetFloat64s(randVals(rng, numelOf(wsh)))
	b := autograd.Param(dev, dt, "b", wsh[0])
	s := autograd.NewScope()
	x := s.FromFloat64s(dev, xs, randVals(rng, numelOf(xs))).Cast(dt)
	dev.ResetPeak()
	var st []device.Stats
	st = append(st, dev.Stats())
	y := autograd.Conv2d(x, w, b, o)
	st = append(st, dev.Stats())
	if err := y.Sum(false).Backward(); err != nil {
		t.Fatal(err)
	}
	st = append(st, dev.Stats())
	s.Release()
	w.Release()
	b.Release()
	st = append(st, dev.Stats())
	if n := dev.LiveBlocks(); n != 0 {
		t.Errorf("%s: %d blocks live: %v", dev.Name(), n, dev.Live())
	}
	return st
}

func TestConv2dMemory(t *testing.T) {
	cases := []struct {
		name    string
		dt      dtype.DType
		xs, wsh []int
		o       autograd.ConvOptions
		oh, ow  int
	}{
		{"f32_3x3", dtype.F32, []int{2, 4, 7, 6}, []int{6, 2, 3, 3}, autograd.ConvOptions{Stride: [2]int{2, 1}, Padding: [2]int{1, 1}, Groups: 2}, 4, 6},
		{"f64_dilated", dtype.F64, []int{1, 3, 8, 8}, []int{2, 3, 2, 3}, autograd.ConvOptions{Dilation: [2]int{2, 2}}, 6, 4},
		{"f16_computes_f32", dtype.F16, []int{2, 2, 5, 5}, []int{3, 2, 3, 3}, autograd.ConvOptions{}, 3, 3},
		{"pointwise", dtype.F32, []int{2, 4, 5, 3}, []int{8, 4, 1, 1}, autograd.ConvOptions{}, 5, 3},
		{"pointwise_bf16", dtype.BF16, []int{2, 6, 5, 3}, []int{8, 3, 1, 1}, autograd.ConvOptions{Groups: 2}, 5, 3},
		// N·OH·OW = 4608: on AMX the input gradient runs by flipped filters.
		{"bf16_flipped", dtype.BF16, []int{2, 4, 48, 48}, []int{6, 4, 3, 3}, autograd.ConvOptions{Padding: [2]int{1, 1}}, 48, 48},
		{"f32_small_planes", dtype.F32, []int{16, 8, 4, 4}, []int{8, 8, 3, 3}, autograd.ConvOptions{Padding: [2]int{1, 1}}, 4, 4},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			n, k := c.xs[0], c.wsh[0]
			groups := max(c.o.Groups, 1)
			size := int64(c.dt.Size())
			csize := int64(4)
			if c.dt == dtype.F64 {
				csize = 8
			}
			yBytes := int64(n*k*c.oh*c.ow) * size
			p := device.Conv2d{N: n, C: c.xs[1], H: c.xs[2], W: c.xs[3], K: k, R: c.wsh[2], S: c.wsh[3],
				StrideH: max(c.o.Stride[0], 1), StrideW: max(c.o.Stride[1], 1), PadH: c.o.Padding[0], PadW: c.o.Padding[1],
				DilH: max(c.o.Dilation[0], 1), DilW: max(c.o.Dilation[1], 1), Groups: groups}
			p.OutSize()
			if p.OH != c.oh || p.OW != c.ow {
				t.Fatalf("output %d×%d, want %d×%d", p.OH, p.OW, c.oh, c.ow)
			}
			wsBytes := int64(p.ForwardWorkspace(c.dt)) * csize
			got := convMem(t, cpu.New(0, device.Options{}), c.dt, c.xs, c.wsh, c.o)
			before, after := got[0], got[1]
			act := func(s device.Stats) device.Counter { return s.ByTag[device.Activation] }
			wsc := func(s device.Stats) device.Counter { return s.ByTag[device.Workspace] }
			if d := act(after).Current - act(before).Current; d != yBytes {
				t.Errorf("forward added %d activation bytes, want y = %d", d, yBytes)
			}
			if d := after.Requested.Current - before.Requested.Current; d != yBytes {
				t.Errorf("forward added %d bytes in all, want y = %d", d, yBytes)
			}
			if wsc(after).Current != wsc(before).Current || wsc(after).Peak-wsc(before).Current != wsBytes {
				t.Errorf("workspace current %d→%d, peak %d: want back to %d with peak %d more",
					wsc(before).Current, wsc(after).Current, wsc(after).Peak, wsc(before).Current, wsBytes)
			}
			if d := after.Requested.Peak - before.Requested.Current; d != yBytes+wsBytes {
				t.Errorf("forward peak %d above the start, want y + workspace = %d", d, yBytes+wsBytes)
			}
			// Backward computes dw alone (x needs no gradient) in its own
			// workspace, beside dy (made dense by Sum's backward) and dw
			// (a workspace until it becomes the gradient).
			gwBytes := int64(p.GradWeightWorkspace(c.dt)) * csize
			dwBytes := int64(numelOf(c.wsh)) * size
			if d, want := wsc(got[2]).Peak-wsc(before).Current, max(wsBytes, yBytes+dwBytes+gwBytes); d != want {
				t.Errorf("workspace peak %d through backward, want %d: max(forward %d, dy + dw + weight gradient's %d)", d, want, wsBytes, gwBytes)
			}
			sameStats(t, got, convMem(t, meta.New(0, device.Options{}), c.dt, c.xs, c.wsh, c.o))
		})
	}
}

// sameStats checks that two devices' snapshots agree on exact bytes.
func sameStats(t *testing.T, cpuSt, metaSt []device.Stats) {
	t.Helper()
	for i := range cpuSt {
		if cpuSt[i].Requested != metaSt[i].Requested || cpuSt[i].ByTag != metaSt[i].ByTag {
			t.Errorf("snapshot %d: cpu %+v by tag %+v, meta %+v by tag %+v", i,
				cpuSt[i].Requested, cpuSt[i].ByTag, metaSt[i].Requested, metaSt[i].ByTag)
		}
	}
}

func wantError(t *testing.T, f func(), words ...string) {
	t.Helper()
	err := autograd.Try(f)
	var e *autograd.Error
	if !errors.As(err, &e) {
		t.Errorf("got %v, want *autograd.Error containing %q", err, words)
		return
	}
	for _, w := range words {
		if !strings.Contains(e.Error(), w) {
			t.Errorf("error %q does not contain %q", e.Error(), w)
		}
	}
}

func TestConv2dBadInput(t *testing.T) {
	dev := cpu.New(0, device.Options{})
	z := func(dt dtype.DType, shape ...int) *autograd.Tensor { return autograd.Zeros(dev, dt, shape...) }
	x := z(dtype.F32, 2, 4, 5, 5)
	none := autograd.ConvOptions{}
	wantError(t, func() { autograd.Conv2d(x, z(dtype.F32, 3, 3, 3, 3), nil, none) }, "conv2d", "[2 4 5 5]", "[3 3 3 3]")
	wantError(t, func() { autograd.Conv2d(x, z(dtype.F32, 3, 2, 3, 3), nil, autograd.ConvOptions{Groups: 2}) }, "conv2d", "[3 2 3 3]", "divisible")
	wantError(t, func() { autograd.Conv2d(z(dtype.F32, 4, 5, 5), z(dtype.F32, 3, 4, 3, 3), nil, none) }, "conv2d", "[4 5 5]", "(N, C, H, W)")
	wantError(t, func() { autograd.Conv2d(x, z(dtype.F32, 3, 4, 3, 3), z(dtype.F32, 4), none) }, "conv2d", "bias [4]", "want (3)")
	wantError(t, func() { autograd.Conv2d(x, z(dtype.F32, 3, 4, 7, 3), nil, none) }, "conv2d", "[2 4 5 5]", "smaller")
	wantError(t, func() { autograd.Conv2d(x, z(dtype.F64, 3, 4, 3, 3), nil, none) }, "conv2d", "[2 4 5 5] f32", "[3 4 3 3] f64")
	wantError(t, func() {
		autograd.Conv2d(x, z(dtype.F32, 3, 4, 3, 3), nil, autograd.ConvOptions{Padding: [2]int{-1, 0}})
	}, "conv2d", "padding [-1 0]")
}
