package cuda

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/headroom-ml/headroom/device"
	"github.com/headroom-ml/headroom/dtype"
)

// The row, loss, index and attention tests (softmax_test.go, norm_test.go,
// loss_test.go, index_test.go, attention_test.go) run each method on the cpu
// device and on the emulated cuda device (harness_test.go) with the same
// operands, and compare the outputs: bit for bit where the cpu's order of
// operations is followed exactly, else within rowTol (see check).

// rig is a test's devices and random source.
type rig struct {
	t *testing.T
	p pair
	r *rand.Rand
}

func newRig(t *testing.T) *rig {
	return &rig{t: t, p: devices(t), r: rand.New(rand.NewPCG(1, 2))}
}

// of is a twin of dtype dt and shape holding vals (converted to dt).
func (g *rig) of(dt dtype.DType, vals []float64, shape ...int) twin {
	g.t.Helper()
	o := dense(dt, shape...)
	if len(vals) != o.n {
		g.t.Fatalf("%d values for shape %v", len(vals), shape)
	}
	raw := make([]byte, o.n*dt.Size())
	dtype.FromF64(dt, raw, vals)
	return g.p.put(g.t, o, raw)
}

// uniform returns n values uniform in [lo, hi).
func (g *rig) uniform(n int, lo, hi float64) []float64 {
	v := make([]float64, n)
	for i := range v {
		v[i] = lo + (hi-lo)*g.r.Float64()
	}
	return v
}

// rand is a twin of values uniform in [-2, 2).
func (g *rig) rand(dt dtype.DType, shape ...int) twin {
	return g.of(dt, g.uniform(dense(dt, shape...).n, -2, 2), shape...)
}

// both runs f with the cpu's kernels and operands, then the emulated
// device's.
func (g *rig) both(f func(k device.Kernels, o func(twin) device.Operand)) {
	f(g.p.cpu.Kernels(), func(x twin) device.Operand { return x.cpu })
	f(g.p.gpu.Kernels(), func(x twin) device.Operand { return x.gpu })
}

// floats reads both devices' copies of x as float64.
func (g *rig) floats(x twin) (want, got []float64) {
	c, d := g.p.read(x)
	want, got = make([]float64, x.spec.n), make([]float64, x.spec.n)
	dtype.ToF64(want, x.spec.dt, c)
	dtype.ToF64(got, x.spec.dt, d)
	return want, got
}

// rowTol is the relative tolerance of these kernels in dtype dt: the cpu
// and the kernels sum in different orders and use different exponentials,
// and a 16-bit result may round to a neighbouring value.
func rowTol(dt dtype.DType) float64 {
	switch dt {
	case dtype.F64:
		return 1e-10
	case dtype.F32:
		return 5e-6
	case dtype.F16:
		return 2e-3
	}
	return 1.6e-2
}

// check compares x on the emulated device with the cpu's within tol
// (0: bit for bit) relative to the larger of the element and 1/100 of the
// output's largest magnitude, and reports the worst element. NaN must
// match NaN.
func (g *rig) check(what string, x twin, tol float64) {
	g.t.Helper()
	g.within(what, x, tol, 1e-2)
}

// checkNorm is check with errors relative to the output's largest
// magnitude: for outputs that are sums of terms that cancel (attention's
// weighted sums of values), whose small elements carry the rounding of
// the large terms.
func (g *rig) checkNorm(what string, x twin, tol float64) {
	g.t.Helper()
	g.within(what, x, tol, 1)
}

// within is check with errors relative to max(|element|, floor·largest).
func (g *rig) within(what string, x twin, tol, floor float64) {
	g.t.Helper()
	if tol == 0 {
		c, d := g.p.read(x)
		exact(g.t, what, x.spec.dt, c, d)
		return
	}
	want, got := g.floats(x)
	scale := 0.0
	for _, w := range want {
		if !math.IsNaN(w) {
			scale = max(scale, math.Abs(w))
		}
	}
	worst, at := 0.0, -1
	for i, w := range want {
		if math.IsNaN(w) || math.IsNaN(got[i]) {
			if math.IsNaN(w) != math.IsNaN(got[i]) {
				g.t.Errorf("%s[%d] = %g on cuda, %g on cpu", what, i, got[i], w)
				return
			}
			continue
		}
		if e := math.Abs(got[i]-w) / max(math.Abs(w), floor*scale, 1e-300); e > worst {
			worst, at = e, i
		}
	}
	if worst > tol {
		g.t.Errorf("%s[%d] = %.9g on cuda, %.9g on cpu (relative error %.3g > %.3g)", what, at, got[at], want[at], worst, tol)
	}
}

// none is an absent operand.
func none() twin { return nilTwin(dtype.F32) }

func TestSoftmax(t *testing.T) {
	g := newRig(t)
	for _, dt := range floatDTypes() {
		for _, sh := range [][2]int{{3, 5}, {4, 40}, {2, 700}, {1, 1}} {
			for _, log := range []bool{false, true} {
				t.Run(fmt.Sprintf("%s/%dx%d/log=%v", dt, sh[0], sh[1], log), func(t *testing.T) {
					g.t = t
					rows, cols := sh[0], sh[1]
					x, y := g.rand(dt, rows, cols), g.rand(dt, rows, cols)
					g.both(func(k device.Kernels, o func(twin) device.Operand) { k.Softmax(o(y), o(x), rows, cols, log) })
					g.check("Softmax y", y, rowTol(dt))
					dy, dx := g.rand(dt, rows, cols), g.rand(dt, rows, cols)
					g.both(func(k device.Kernels, o func(twin) device.Operand) {
						k.SoftmaxGrad(o(dx), o(dy), o(y), rows, cols, log)
					})
					g.check("SoftmaxGrad dx", dx, rowTol(dt))
				})
			}
		}
	}
}

// TestSoftmaxNaN: a row holding a NaN is NaN on both devices; the other
// row is not touched by it.
func TestSoftmaxNaN(t *testing.T) {
	g := newRig(t)
	x := g.of(dtype.F32, []float64{1, math.NaN(), 2, 0, 1, 2}, 2, 3)
	y := g.rand(dtype.F32, 2, 3)
	g.both(func(k device.Kernels, o func(twin) device.Operand) { k.Softmax(o(y), o(x), 2, 3, false) })
	g.check("Softmax y", y, rowTol(dtype.F32))
	if _, v := g.floats(y); !math.IsNaN(v[0]) || math.IsNaN(v[3]) {
		t.Errorf("Softmax of rows [1 NaN 2] [0 1 2] = %v, want NaNs then numbers", v)
	}
}
