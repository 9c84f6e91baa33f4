package cuda

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/headroom-ml/headroom/device"
	"github.com/headroom-ml/headroom/dtype"
)

// The quantization kernels against the cpu device, bit for bit, on random
// operands with the edge cases of the contract: values on the ±127 clamp
// and past it, half-way ties, all-zero and tiny rows (the 2^−23 floor),
// NaN and ±Inf, and one scale or one per row.

// quantValues returns n floats (rows of cols) mixing normal values with
// the contract's edge cases for the scale s of every row: exact ties
// (k + ½)·s, the clamp ±127·s and ±127.5·s, values past it, and specials.
func (g *rig) quantValues(rows, cols int, s float64) []float64 {
	v := g.uniform(rows*cols, -3, 3)
	edge := []float64{127 * s, -127 * s, 127.5 * s, -127.5 * s, 126.5 * s, -126.5 * s, 0.5 * s, -0.5 * s, 1.5 * s,
		-2.5 * s, 300 * s, -1e30, math.NaN(), math.Inf(1), math.Inf(-1), math.Copysign(0, -1), 1e-30}
	for i := range v {
		if g.r.IntN(3) == 0 {
			v[i] = edge[g.r.IntN(len(edge))]
		}
	}
	return v
}

// TestQuantScales: per-row scales of random rows, of an all-zero row and
// of a row of tiny values (both the 2^−23 floor), of a NaN row, and of
// one long row.
func TestQuantScales(t *testing.T) {
	g := newRig(t)
	for _, c := range []struct{ rows, cols int }{{1, 1}, {1, 3000}, {5, 7}, {70, 33}, {3, 1}} {
		t.Run(fmt.Sprintf("%dx%d", c.rows, c.cols), func(t *testing.T) {
			g.t = t
			v := g.uniform(c.rows*c.cols, -50, 50)
			if c.rows >= 5 {
				for j := range c.cols {
					v[j], v[c.cols+j], v[2*c.cols+j] = 0, 1e-9*v[2*c.cols+j], v[3*c.cols+j]*1e-3
				}
				v[4*c.cols+c.cols/2] = math.NaN()
			}
			src, dst := g.of(dtype.F32, v, c.rows, c.cols), g.rand(dtype.F32, c.rows)
			g.both(func(k device.Kernels, o func(twin) device.Operand) { k.QuantScales(o(dst), o(src), c.rows) })
			g.check("QuantScales", dst, 0)
			want, _ := g.floats(dst)
			if c.rows >= 5 && (want[0] != 0x1p-23 || want[1] != 0x1p-23 || !math.IsNaN(want[4])) {
				t.Errorf("scales of the zero, tiny and NaN rows: %g %g %g, want 2^-23 2^-23 NaN", want[0], want[1], want[4])
			}
		})
	}
}

// TestQuantize: Quantize, FakeQuantize (F32, F64, in place) and
// FakeQuantizeGrad (dx in dy's memory) with per-row and per-tensor
// scales; the int8 results hold ±127 and never −128.
func TestQuantize(t *testing.T) {
	g := newRig(t)
	for _, c := range []struct {
		rows, cols int
		perRow     bool
	}{{1, 1, false}, {4, 9, true}, {4, 9, false}, {33, 65, true}, {1, 5000, false}} {
		t.Run(fmt.Sprintf("%dx%d/per-row=%v", c.rows, c.cols, c.perRow), func(t *testing.T) {
			g.t = t
			n, ns := c.rows*c.cols, 1
			sv := []float64{0.25} // a power of two: (k + ½)·s are exact ties
			if c.perRow {
				ns, sv = c.rows, g.uniform(c.rows, 0.01, 2)
				sv[0], sv[len(sv)-1] = 0.25, 0x1p-23
			}
			scale := g.of(dtype.F32, sv, ns)
			v := g.quantValues(c.rows, c.cols, sv[0])
			q := g.rand(dtype.I8, n)
			src := g.of(dtype.F32, v, n)
			g.both(func(k device.Kernels, o func(twin) device.Operand) { k.Quantize(o(q), o(src), o(scale), c.rows) })
			g.check("Quantize", q, 0)
			g.noMinus128(q, n > 100)
			for _, dt := range []dtype.DType{dtype.F32, dtype.F64} {
				x, dy := g.of(dt, v, n), g.rand(dt, n)
				fq := g.rand(dt, n)
				g.both(func(k device.Kernels, o func(twin) device.Operand) {
					k.FakeQuantize(o(fq), o(x), o(scale), c.rows)
					k.FakeQuantizeGrad(o(dy), o(dy), o(x), o(scale), c.rows)
					k.FakeQuantize(o(x), o(x), o(scale), c.rows)
				})
				g.sameOrNaN("FakeQuantize "+dt.String(), fq)
				g.sameOrNaN("FakeQuantize in place "+dt.String(), x)
				g.check("FakeQuantizeGrad "+dt.String(), dy, 0)
			}
		})
	}
}

// sameOrNaN compares x on both devices bit for bit, except that a NaN
// matches any NaN: FakeQuantize F64 keeps a NaN input NaN, and the cpu's
// payload is whatever Go's min and max make of it on the machine (on
// amd64 they OR 127's mantissa bits into it).
func (g *rig) sameOrNaN(what string, x twin) {
	g.t.Helper()
	c, d := g.p.read(x)
	sz := x.spec.dt.Size()
	want, got := make([]float64, x.spec.n), make([]float64, x.spec.n)
	dtype.ToF64(want, x.spec.dt, c)
	dtype.ToF64(got, x.spec.dt, d)
	for i := range want {
		if math.IsNaN(want[i]) && math.IsNaN(got[i]) {
			copy(d[i*sz:(i+1)*sz], c[i*sz:(i+1)*sz])
		}
	}
	exact(g.t, what, x.spec.dt, c, d)
}

// noMinus128 fails unless q (I8) avoids −128 and, when both, holds both
// clamp values.
func (g *rig) noMinus128(q twin, both bool) {
	g.t.Helper()
	_, got := g.floats(q)
	seen := map[float64]bool{}
	for _, v := range got {
		seen[v] = true
	}
	if seen[-128] || (both && (!seen[127] || !seen[-127])) {
		g.t.Errorf("quantized values: −128 present %v, 127 %v, −127 %v; want no −128 and both clamps", seen[-128], seen[127], seen[-127])
	}
}

// i8Rand is a twin of n random int8 in [−127, 127], a quarter of them on
// the clamps, but for the first zeros, which are 0 (a row of zeros makes
// accumulators of 0: with a negative scale, −0 before a bias).
func (g *rig) i8Rand(n, zeros int) twin {
	v := make([]float64, n)
	for i := zeros; i < n; i++ {
		v[i] = float64(g.r.IntN(255) - 127)
		if g.r.IntN(4) == 0 {
			v[i] = float64(127 * (1 - 2*g.r.IntN(2)))
		}
	}
	return g.of(dtype.I8, v, n)
}

// biasTwin is n random biases, or a nil operand.
func (g *rig) biasTwin(n int, bias bool) twin {
	if !bias {
		return none()
	}
	return g.rand(dtype.F32, n)
}

// TestLinearI8: odd shapes, shapes on and across the 64-wide tiles, K up
// to 1100 (accumulators past 2^24 round in the epilogue), with and
// without a bias, and one negative weight scale (with a row of zeros in x: −0 without a bias).
func TestLinearI8(t *testing.T) {
	g := newRig(t)
	for _, c := range []struct {
		m, n, k int
		bias    bool
	}{{1, 1, 1, false}, {5, 7, 3, true}, {17, 65, 130, true}, {3, 70, 300, false}, {64, 64, 64, true},
		{65, 129, 33, false}, {2, 3, 1100, true}} {
		t.Run(fmt.Sprintf("m%d_n%d_k%d_bias=%v", c.m, c.n, c.k, c.bias), func(t *testing.T) {
			g.t = t
			xq, wq := g.i8Rand(c.m*c.k, c.k), g.i8Rand(c.n*c.k, 0)
			ws := g.uniform(c.n, 1e-3, 0.1)
			ws[0] = -ws[0]
			xs, wsc, b := g.of(dtype.F32, []float64{0.037}, 1), g.of(dtype.F32, ws, c.n), g.biasTwin(c.n, c.bias)
			y := g.rand(dtype.F32, c.m, c.n)
			g.both(func(k device.Kernels, o func(twin) device.Operand) {
				k.LinearI8(o(y), o(xq), o(wq), o(xs), o(wsc), o(b), c.m, c.n, c.k)
			})
			g.check("LinearI8", y, 0)
		})
	}
}

// TestConv2dI8: the float convolutions' cases (stride, padding, dilation,
// groups, pointwise, rectangular) with ReLU and bias on and off (filter 0
// all zeros with a negative scale: the cpu adds +0 even without a bias), and a
// batch the workspace holds in two runs of samples.
func TestConv2dI8(t *testing.T) {
	g := newRig(t)
	big := device.Conv2d{N: 3, C: 2, H: 23, W: 23, K: 3, R: 3, S: 3, StrideH: 1, StrideW: 1, PadH: 1, PadW: 1, DilH: 1, DilW: 1, Groups: 1}
	big.OutSize()
	for i, p := range append(convCases(), big) {
		relu, bias := i%2 == 0, i%3 != 1
		t.Run(fmt.Sprintf("%d/n%d_c%d_%dx%d_k%d_%dx%d_s%dx%d_p%dx%d_d%dx%d_g%d_relu=%v_bias=%v", i, p.N, p.C, p.H, p.W, p.K, p.R, p.S,
			p.StrideH, p.StrideW, p.PadH, p.PadW, p.DilH, p.DilW, p.Groups, relu, bias), func(t *testing.T) {
			g.t = t
			g.conv2dI8(p, relu, bias)
		})
	}
}

func (g *rig) conv2dI8(p device.Conv2d, relu, bias bool) {
	crs := p.C / p.Groups * p.R * p.S
	xq, wq := g.i8Rand(p.N*p.C*p.H*p.W, 0), g.i8Rand(p.K*crs, crs)
	wv := g.uniform(p.K, 1e-3, 0.1)
	wv[0] = -wv[0]
	xs, ws, b := g.of(dtype.F32, []float64{0.021}, 1), g.of(dtype.F32, wv, p.K), g.biasTwin(p.K, bias)
	cw, aw := p.I8Workspace()
	col, acc := g.rand(dtype.I8, cw), g.rand(dtype.I32, aw)
	y := g.rand(dtype.F32, p.N, p.K, p.OH, p.OW)
	g.both(func(k device.Kernels, o func(twin) device.Operand) {
		k.Conv2dI8(p, o(y), o(xq), o(wq), o(xs), o(ws), o(b), o(col), o(acc), relu)
	})
	g.check("Conv2dI8", y, 0)
}

// TestQuantBadOperands: wrong dtypes, scale counts, lengths and
// workspaces raise a *device.KernelError naming the problem.
func TestQuantBadOperands(t *testing.T) {
	g := newRig(t)
	f32, i8 := g.rand(dtype.F32, 6), g.rand(dtype.I8, 6)
	f16, two := g.rand(dtype.F16, 6), g.rand(dtype.F32, 2)
	one := g.of(dtype.F32, []float64{0.1}, 1)
	p := device.Conv2d{N: 1, C: 1, H: 3, W: 3, K: 1, R: 2, S: 2, StrideH: 1, StrideW: 1, DilH: 1, DilW: 1, Groups: 1}
	p.OutSize()
	x9, y4, w4, a6 := g.rand(dtype.I8, 9), g.rand(dtype.F32, 4), g.rand(dtype.I8, 4), g.rand(dtype.I32, 6)
	k := g.p.gpu.Kernels()
	cases := []struct {
		name, want string
		call       func()
	}{
		{"scales-dtype", "want contiguous f32", func() { k.QuantScales(i8.gpu, f32.gpu, 6) }},
		{"scales-rows", "4 rows", func() { k.QuantScales(two.gpu, f32.gpu, 4) }},
		{"quantize-scales", "2 scales", func() { k.Quantize(i8.gpu, f32.gpu, two.gpu, 3) }},
		{"fake-f16", "dtype f16", func() { k.FakeQuantize(f16.gpu, f16.gpu, one.gpu, 1) }},
		{"grad-mixed", "want contiguous f32", func() { k.FakeQuantizeGrad(f32.gpu, i8.gpu, f32.gpu, one.gpu, 1) }},
		{"linear-k", "want 1 ≤ k", func() { k.LinearI8(f32.gpu, i8.gpu, i8.gpu, one.gpu, f32.gpu, none().gpu, 1, 6, 0) }},
		{"linear-bias", "weight scales and biases", func() { k.LinearI8(f32.gpu, i8.gpu, i8.gpu, one.gpu, f32.gpu, two.gpu, 1, 6, 1) }},
		{"conv-workspace", "workspaces", func() { k.Conv2dI8(p, y4.gpu, x9.gpu, w4.gpu, one.gpu, one.gpu, none().gpu, i8.gpu, a6.gpu, false) }},
		{"conv-length", "want 9 elements", func() { k.Conv2dI8(p, y4.gpu, w4.gpu, w4.gpu, one.gpu, one.gpu, none().gpu, i8.gpu, a6.gpu, false) }},
	}
	for _, tc := range cases {
		err := catch(tc.call)
		var ke *device.KernelError
		if !errors.As(err, &ke) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: raised %v, want a *device.KernelError saying %q", tc.name, err, tc.want)
		}
	}
}
