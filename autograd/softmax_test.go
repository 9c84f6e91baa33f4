package autograd_test

import (
	"errors"
	"math"
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

// Helpers of the normalisation, softmax and loss tests are prefixed nsl.

func nslVals(rng *rand.Rand, n int, lo, hi float64) []float64 {
	v := make([]float64, n)
	for i := range v {
		v[i] = lo + (hi-lo)*rng.Float64()
	}
	return v
}

func nslNumel(shape []int) int {
	n := 1
	for _, s := range shape {
		n *= s
	}
	return n
}

// nslLeaf makes a free-standing leaf of dtype dt holding v.
func nslLeaf(dev *device.Device, dt dtype.DType, shape []int, v []float64, grad bool) *autograd.Tensor {
	t := autograd.New(dev, dt, device.Other, shape...)
	t.SetFloat64s(v)
	return t.SetRequiresGrad(grad)
}

// nslRun runs f on leaves of dtype dt holding vals (those with grad[i]
// requiring grad) and backpropagates the random projection dy of the
// output; it returns the output and the leaves' gradients as float64 (nil
// where none) and checks that nothing is left allocated.
func nslRun(t *testing.T, dt dtype.DType, shapes [][]int, vals [][]float64, grad []bool, dy []float64,
	f func(s *autograd.Scope, in []*autograd.Tensor) *autograd.Tensor) (y []float64, grads [][]float64) {
	t.Helper()
	dev := cpu.New(0, device.Options{})
	s := autograd.NewScope()
	var in, used []*autograd.Tensor
	for i, sh := range shapes {
		l := nslLeaf(dev, dt, sh, vals[i], grad[i])
		in = append(in, l)
		used = append(used, s.Use(l))
	}
	out := f(s, used)
	// Losses of 16-bit inputs are F32; every other op keeps the dtype.
	if out.DType() != dt && !(dt.IsLowPrecision() && out.DType() == dtype.F32) {
		t.Fatalf("output dtype %s, want %s", out.DType(), dt)
	}
	y = out.Float64s()
	if dy != nil {
		g := s.FromFloat64s(dev, out.Shape(), dy).Cast(out.DType())
		if err := out.BackwardWith(g); err != nil {
			t.Fatal(err)
		}
	}
	s.Release()
	for _, l := range in {
		var gv []float64
		if l.Grad() != nil {
			gv = l.Grad().Float64s()
		}
		grads = append(grads, gv)
		l.Release()
	}
	if n := dev.LiveBlocks(); n != 0 {
		t.Errorf("%d blocks live after the run: %v", n, dev.Live())
	}
	return y, grads
}

// nslCompareDTypes checks that f in F32 agrees with F64 within tol32,
// forward and backward, and that F16 and BF16 (computed in F32, stored in
// 2 bytes) agree within 0.05.
func nslCompareDTypes(t *testing.T, shapes [][]int, grad []bool, outLen int, tol32 float64,
	f func(s *autograd.Scope, in []*autograd.Tensor) *autograd.Tensor) {
	t.Helper()
	rng := rand.New(rand.NewPCG(11, 12))
	var vals [][]float64
	for _, sh := range shapes {
		vals = append(vals, nslVals(rng, nslNumel(sh), -2, 2))
	}
	dy := nslVals(rng, outLen, -1, 1)
	y64, g64 := nslRun(t, dtype.F64, shapes, vals, grad, dy, f)
	for _, c := range []struct {
		dt  dtype.DType
		tol float64
	}{{dtype.F32, tol32}, {dtype.F16, 0.05}, {dtype.BF16, 0.05}} {
		y, g := nslRun(t, c.dt, shapes, vals, grad, dy, f)
		if d := autogradtest.MaxDiff(y, y64); !(d <= c.tol*(1+autogradtest.MaxAbs(y64))) {
			t.Errorf("%s forward differs from f64 by %.3g", c.dt, d)
		}
		for i := range g {
			if d := autogradtest.MaxDiff(g[i], g64[i]); !(d <= c.tol*(1+autogradtest.MaxAbs(g64[i]))) {
				t.Errorf("%s gradient %d differs from f64 by %.3g", c.dt, i, d)
			}
		}
	}
}

// nslMem runs build on dev in a fresh scope and returns snapshots of the
// accounting: after build made the inputs (peak reset), after op (the op
// under test), after Backward of the result's sum, and after everything
// was released; it checks that nothing is left.
func nslMem(t *testing.T, dev *device.Device, build func(s *autograd.Scope, dev *device.Device) (release func(), op func() *autograd.Tensor)) []device.Stats {
	t.Helper()
	s := autograd.NewScope()
	release, op := build(s, dev)
	dev.ResetPeak()
	st := []device.Stats{dev.Stats()}
	y := op()
	st = append(st, dev.Stats())
	loss := y.Sum(false)
	if err := loss.Backward(); err != nil {
		t.Fatal(err)
	}
	st = append(st, dev.Stats())
	// Backward freed what the op saved: only y and the loss remain of
	// what the step added as activations.
	act := func(s device.Stats) int64 { return s.ByTag[device.Activation].Current }
	if d := act(st[2]) - act(st[0]); d != y.Bytes()+loss.Bytes() {
		t.Errorf("%s: %d activation bytes after backward, want y and the loss, %d", dev.Name(), d, y.Bytes()+loss.Bytes())
	}
	s.Release()
	release()
	st = append(st, dev.Stats())
	if n := dev.LiveBlocks(); n != 0 {
		t.Errorf("%s: %d blocks live: %v", dev.Name(), n, dev.Live())
	}
	return st
}

// nslMemCheck runs nslMem on cpu and meta, checks that both account the
// same bytes at every snapshot, and that the op added exactly act bytes
// of Activation (and nothing else that outlives it) with a workspace peak
// of exactly ws bytes above the start, its only transient memory.
func nslMemCheck(t *testing.T, act, ws int64, build func(s *autograd.Scope, dev *device.Device) (func(), func() *autograd.Tensor)) {
	t.Helper()
	nslMemCheckPeak(t, act, ws, ws, build)
}

// nslMemCheckPeak is nslMemCheck for an op whose transient memory
// (peak above the start less act) is transient bytes, not all workspace.
func nslMemCheckPeak(t *testing.T, act, ws, transient int64, build func(s *autograd.Scope, dev *device.Device) (func(), func() *autograd.Tensor)) {
	t.Helper()
	c := nslMem(t, cpu.New(0, device.Options{}), build)
	m := nslMem(t, meta.New(0, device.Options{}), build)
	for i := range c {
		if c[i].Requested != m[i].Requested || c[i].ByTag != m[i].ByTag {
			t.Errorf("snapshot %d: cpu %+v by tag %+v, meta %+v by tag %+v", i, c[i].Requested, c[i].ByTag, m[i].Requested, m[i].ByTag)
		}
	}
	before, after := c[0], c[1]
	a := func(s device.Stats) device.Counter { return s.ByTag[device.Activation] }
	w := func(s device.Stats) device.Counter { return s.ByTag[device.Workspace] }
	if d := a(after).Current - a(before).Current; d != act {
		t.Errorf("forward added %d activation bytes, want %d", d, act)
	}
	if d := after.Requested.Current - before.Requested.Current; d != act {
		t.Errorf("forward added %d bytes in all, want %d", d, act)
	}
	if w(after).Current != w(before).Current {
		t.Errorf("forward left %d workspace bytes", w(after).Current-w(before).Current)
	}
	if d := w(after).Peak - w(before).Current; d != ws {
		t.Errorf("forward workspace peak %d, want %d", d, ws)
	}
	if d := after.Requested.Peak - before.Requested.Current; d != act+transient {
		t.Errorf("forward peak %d above the start, want %d", d, act+transient)
	}
}

// nslWantError checks that f panics with an *autograd.Error containing words.
func nslWantError(t *testing.T, f func(), words ...string) {
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

func TestGradSoftmax(t *testing.T) {
	sm := func(dim int, log bool) func(*autograd.Scope, []*autograd.Tensor) *autograd.Tensor {
		return func(_ *autograd.Scope, in []*autograd.Tensor) *autograd.Tensor {
			if log {
				return autograd.LogSoftmax(in[0], dim)
			}
			return autograd.Softmax(in[0], dim)
		}
	}
	var cases []gradCase
	for _, log := range []bool{false, true} {
		p := "softmax_"
		if log {
			p = "log_softmax_"
		}
		cases = append(cases,
			gradCase{name: p + "last", shapes: [][]int{{3, 5}}, f: sm(-1, log)},
			gradCase{name: p + "dim0", shapes: [][]int{{4, 3}}, f: sm(0, log)},
			gradCase{name: p + "middle", shapes: [][]int{{2, 3, 4}}, f: sm(1, log)},
			gradCase{name: p + "vector", shapes: [][]int{{7}}, f: sm(0, log)},
			gradCase{name: p + "one_class", shapes: [][]int{{4, 1}}, f: sm(1, log)},
			gradCase{name: p + "one_row", shapes: [][]int{{1, 5}}, f: sm(0, log)},
			gradCase{name: p + "size1", shapes: [][]int{{1, 1}}, f: sm(-1, log)},
			gradCase{name: p + "transposed_input", shapes: [][]int{{3, 4}}, f: func(_ *autograd.Scope, in []*autograd.Tensor) *autograd.Tensor {
				x := in[0].T()
				if log {
					return autograd.LogSoftmax(x, -1)
				}
				return autograd.Softmax(x, -1)
			}},
			gradCase{name: p + "chained", shapes: [][]int{{3, 4}}, f: func(_ *autograd.Scope, in []*autograd.Tensor) *autograd.Tensor {
				// A non-contiguous output feeds another op, whose
				// gradient reaches softmax strided.
				y := sm(0, log)(nil, in)
				return y.Mul(y).T()
			}},
		)
	}
	runGradCases(t, cases)
}

func TestSoftmaxDTypes(t *testing.T) {
	for _, dim := range []int{0, 1} {
		for _, log := range []bool{false, true} {
			nslCompareDTypes(t, [][]int{{5, 6}}, []bool{true}, 30, 1e-5, func(_ *autograd.Scope, in []*autograd.Tensor) *autograd.Tensor {
				if log {
					return autograd.LogSoftmax(in[0], dim)
				}
				return autograd.Softmax(in[0], dim)
			})
		}
	}
}

func TestSoftmaxValues(t *testing.T) {
	dev := cpu.New(0, device.Options{})
	s := autograd.NewScope()
	defer s.Release()
	x := s.FromFloat64s(dev, []int{2, 3}, []float64{1, 2, 3, 1000, 1000, 1000})
	got := autograd.Softmax(x, 1).Float64s()
	e := []float64{math.Exp(1), math.Exp(2), math.Exp(3)}
	sum := e[0] + e[1] + e[2]
	want := []float64{e[0] / sum, e[1] / sum, e[2] / sum, 1.0 / 3, 1.0 / 3, 1.0 / 3}
	if d := autogradtest.MaxDiff(got, want); d > 1e-15 {
		t.Errorf("Softmax = %v, want %v", got, want)
	}
	lg := autograd.LogSoftmax(x, 0).Float64s()
	// Column j: log softmax of (x[0][j], x[1][j]) = x - logaddexp.
	for j := range 3 {
		a, b := float64(j+1), 1000.0
		lse := b + math.Log1p(math.Exp(a-b))
		if math.Abs(lg[j]-(a-lse)) > 1e-12 || math.Abs(lg[3+j]-(b-lse)) > 1e-12 {
			t.Errorf("LogSoftmax column %d = (%v, %v), want (%v, %v)", j, lg[j], lg[3+j], a-lse, b-lse)
		}
	}
}

func TestSoftmaxMemory(t *testing.T) {
	build := func(shape []int, dim int, transposed bool) func(s *autograd.Scope, dev *device.Device) (func(), func() *autograd.Tensor) {
		return func(s *autograd.Scope, dev *device.Device) (func(), func() *autograd.Tensor) {
			x := autograd.New(dev, dtype.F32, device.Parameter, shape...).SetRequiresGrad(true)
			xs := s.Use(x)
			return x.Release, func() *autograd.Tensor {
				in := xs
				if transposed {
					in = xs.T()
				}
				return autograd.Softmax(in, dim)
			}
		}
	}
	const n, c = 6, 10
	bytes := int64(n * c * 4)
	t.Run("last_dim", func(t *testing.T) { nslMemCheck(t, bytes, 0, build([]int{n, c}, -1, false)) })
	// dim 0 of a (N, C) tensor: the permuted view is strided, so the
	// forward pass borrows one dense copy of x.
	t.Run("dim0", func(t *testing.T) { nslMemCheck(t, bytes, bytes, build([]int{n, c}, 0, false)) })
	// dim 0 of a transposed view is dense once moved last: no copy.
	t.Run("dim0_of_transpose", func(t *testing.T) { nslMemCheck(t, bytes, 0, build([]int{n, c}, 0, true)) })
}

func TestSoftmaxBadInput(t *testing.T) {
	dev := cpu.New(0, device.Options{})
	x := autograd.Zeros(dev, dtype.F32, 2, 3)
	defer x.Release()
	i := autograd.Zeros(dev, dtype.I64, 2, 3)
	defer i.Release()
	nslWantError(t, func() { autograd.Softmax(x, 2) }, "softmax", "axis 2", "rank 2")
	nslWantError(t, func() { autograd.LogSoftmax(i, 1) }, "log_softmax", "[2 3]", "i64", "float")
	sc := autograd.Zeros(dev, dtype.F32)
	defer sc.Release()
	nslWantError(t, func() { autograd.Softmax(sc, 0) }, "softmax", "[]")
}
