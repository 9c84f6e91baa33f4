package autograd_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/headroom-ml/headroom/autograd"
	"github.com/headroom-ml/headroom/autograd/autogradtest"
	"github.com/headroom-ml/headroom/device"
	"github.com/headroom-ml/headroom/device/cpu"
	"github.com/headroom-ml/headroom/device/meta"
	"github.com/headroom-ml/headroom/dtype"
)

// iaIdx returns integer indices of shape in s, on in[0]'s device, as I64 or
// (with i32) I32.
func iaIdx(s *autograd.Scope, dev *device.Device, i32 bool, shape []int, v ...int64) *autograd.Tensor {
	t := s.FromInt64s(dev, shape, v)
	if !i32 {
		return t
	}
	c := t.Cast(dtype.I32)
	t.Release()
	return c
}

func TestGradIndex(t *testing.T) {
	type fn = func(s *autograd.Scope, in []*autograd.Tensor) *autograd.Tensor
	sel := func(dim int, i32 bool, shape []int, v ...int64) fn {
		return func(s *autograd.Scope, in []*autograd.Tensor) *autograd.Tensor {
			return autograd.IndexSelect(in[0], dim, iaIdx(s, in[0].Device(), i32, shape, v...))
		}
	}
	emb := func(shape []int, v ...int64) fn {
		return func(s *autograd.Scope, in []*autograd.Tensor) *autograd.Tensor {
			return autograd.Embedding(in[0], iaIdx(s, in[0].Device(), false, shape, v...))
		}
	}
	gather := func(dim int, i32 bool, shape []int, v ...int64) fn {
		return func(s *autograd.Scope, in []*autograd.Tensor) *autograd.Tensor {
			return autograd.Gather(in[0], dim, iaIdx(s, in[0].Device(), i32, shape, v...))
		}
	}
	runGradCases(t, []gradCase{
		{name: "index_select_dim0", shapes: [][]int{{5, 3}}, f: sel(0, false, []int{4}, 4, 0, 4, 2)},
		{name: "index_select_dim1_i32", shapes: [][]int{{2, 5, 3}}, f: sel(1, true, []int{3}, 1, 1, 4)},
		{name: "index_select_last_odd", shapes: [][]int{{3, 7}}, f: sel(-1, false, []int{5}, 6, 0, 3, 3, 5)},
		{name: "index_select_size1", shapes: [][]int{{1, 3, 1}}, f: sel(1, false, []int{1}, 2)},
		{name: "index_select_transposed", shapes: [][]int{{4, 3}}, f: func(s *autograd.Scope, in []*autograd.Tensor) *autograd.Tensor {
			return autograd.IndexSelect(in[0].T(), 1, iaIdx(s, in[0].Device(), false, []int{2}, 3, 1))
		}},
		{name: "embedding_repeated", shapes: [][]int{{6, 3}}, f: emb([]int{2, 3}, 1, 1, 5, 0, 1, 5)},
		{name: "embedding_scalar_index", shapes: [][]int{{4, 5}}, f: emb([]int{}, 2)},
		{name: "gather_dim0", shapes: [][]int{{3, 4, 5}}, f: gather(0, false, []int{2, 4, 5},
			0, 2, 1, 1, 2, 0, 0, 0, 1, 2, 2, 2, 2, 1, 0, 0, 1, 1, 2, 1,
			1, 1, 1, 0, 0, 2, 2, 1, 0, 1, 2, 0, 0, 1, 1, 2, 2, 0, 0, 2)},
		{name: "gather_dim1_i32", shapes: [][]int{{2, 3, 2}}, f: gather(1, true, []int{2, 4, 2}, 0, 2, 1, 1, 2, 2, 0, 1, 1, 0, 0, 2, 2, 1, 1, 1)},
		{name: "gather_dim2", shapes: [][]int{{2, 2, 5}}, f: gather(2, false, []int{2, 2, 3}, 4, 0, 4, 1, 2, 3, 0, 0, 1, 3, 4, 2)},
		{name: "gather_smaller_index", shapes: [][]int{{3, 4}}, f: gather(1, false, []int{2, 2}, 3, 0, 1, 1)},
		{name: "gather_smaller_inner", shapes: [][]int{{4, 3, 3}}, f: gather(0, false, []int{2, 2, 1}, 3, 0, 1, 1)},
		{name: "gather_transposed", shapes: [][]int{{3, 4}}, f: func(s *autograd.Scope, in []*autograd.Tensor) *autograd.Tensor {
			return autograd.Gather(in[0].T(), 1, iaIdx(s, in[0].Device(), false, []int{4, 2}, 2, 0, 1, 1, 0, 0, 2, 1))
		}},
	})
}

// TestEmbeddingGradientAccumulates checks the values: each row's gradient
// is its number of occurrences times the output gradient.
func TestEmbeddingGradientAccumulates(t *testing.T) {
	dev := cpu.New(0, device.Options{})
	w := autograd.Param(dev, dtype.F32, "wte", 4, 2)
	w.SetFloat32s([]float32{0, 1, 2, 3, 4, 5, 6, 7})
	s := autograd.NewScope()
	y := autograd.Embedding(s.Use(w), iaIdx(s, dev, false, []int{5}, 3, 1, 3, 3, 0))
	if got, want := y.Float32s(), []float32{6, 7, 2, 3, 6, 7, 6, 7, 0, 1}; !equal32(got, want) {
		t.Errorf("embedding = %v, want %v", got, want)
	}
	if err := y.Sum(false).Backward(); err != nil {
		t.Fatal(err)
	}
	if got, want := w.Grad().Float32s(), []float32{1, 1, 1, 1, 0, 0, 3, 3}; !equal32(got, want) {
		t.Errorf("weight grad = %v, want %v", got, want)
	}
	s.Release()
	w.Release()
	if n := dev.LiveBlocks(); n != 0 {
		t.Errorf("leak: %v", dev.Live())
	}
}

func equal32(a, b []float32) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestIndexLowPrecision runs the ops on F32 and F16 inputs: selection is an
// exact copy, and backward runs in 2-byte storage.
func TestIndexLowPrecision(t *testing.T) {
	dev := cpu.New(0, device.Options{})
	s := autograd.NewScope()
	defer s.Release()
	vals := []float32{0.5, -1.25, 3, 7.75, -2, 0.125}
	x64 := s.FromFloat64s(dev, []int{3, 2}, []float64{0.5, -1.25, 3, 7.75, -2, 0.125})
	x32 := s.FromFloat32s(dev, []int{3, 2}, vals)
	for _, dt := range []dtype.DType{dtype.F32, dtype.F16, dtype.BF16} {
		x := x32.Cast(dt)
		x.SetRequiresGrad(true)
		idx := iaIdx(s, dev, false, []int{2, 2}, 2, 0, 0, 2)
		want := autograd.Gather(x64, 0, idx).Float64s()
		y := autograd.Gather(x, 0, idx)
		if got := y.Float64s(); autogradtest.MaxDiff(got, want) != 0 {
			t.Errorf("%s gather = %v, want %v", dt, got, want)
		}
		e := autograd.Embedding(x, iaIdx(s, dev, true, []int{3}, 1, 1, 2))
		if e.DType() != dt {
			t.Errorf("%s embedding has dtype %s", dt, e.DType())
		}
		loss := y.Sum(false).Add(e.Sum(false))
		if err := loss.Backward(); err != nil {
			t.Fatal(err)
		}
		// gather reads x[2,0], x[0,1], x[0,0], x[2,1] once each; embedding
		// reads row 1 twice and row 2 once.
		want2 := []float64{1, 1, 2, 2, 2, 2}
		if got := x.Grad().Float64s(); autogradtest.MaxDiff(got, want2) != 0 {
			t.Errorf("%s grad = %v, want %v", dt, got, want2)
		}
		if x.Grad().DType() != dt {
			t.Errorf("%s grad has dtype %s", dt, x.Grad().DType())
		}
		x.ZeroGrad()
	}
}

// iaStatsEqual runs f on a cpu and a meta device and checks that both
// account exactly the same bytes.
func iaStatsEqual(t *testing.T, name string, f func(dev *device.Device)) {
	t.Helper()
	c, m := cpu.New(0, device.Options{}), meta.New(0, device.Options{})
	f(c)
	f(m)
	sc, sm := c.Stats(), m.Stats()
	if sc.Requested != sm.Requested || sc.ByTag != sm.ByTag || sc.AtPeak != sm.AtPeak {
		t.Errorf("%s: cpu and meta accounting differ:\ncpu  %+v %+v\nmeta %+v %+v", name, sc.Requested, sc.ByTag, sm.Requested, sm.ByTag)
	}
	if c.LiveBlocks() != 0 || m.LiveBlocks() != 0 {
		t.Errorf("%s: leak: cpu %v, meta %v", name, c.Live(), m.Live())
	}
}

// iaMemory is one memory test: it runs op on x (a parameter) within a
// scope and checks that the forward adds exactly out activation bytes, that
// releasing every handle leaves exactly saved bytes held by the graph, and
// that backward frees them all.
func iaMemory(t *testing.T, dev *device.Device, name string, xshape []int, out, saved int64,
	op func(s *autograd.Scope, x *autograd.Tensor) (y *autograd.Tensor, handles []*autograd.Tensor)) {
	t.Helper()
	x := autograd.Param(dev, dtype.F32, "x", xshape...)
	s := autograd.NewScope()
	xs := s.Use(x)
	dev.ResetPeak()
	before := dev.Stats().ByTag[device.Activation].Current
	y, handles := op(s, xs)
	st := dev.Stats()
	if got := st.ByTag[device.Activation].Current - before; got != out+inputBytes(handles) {
		t.Errorf("%s: forward added %d activation bytes, want %d (output) + %d (inputs made)", name, got, out, inputBytes(handles))
	}
	if got := st.ByTag[device.Workspace].Current; got != 0 {
		t.Errorf("%s: %d workspace bytes live after forward", name, got)
	}
	loss := y.Sum(false) // saves nothing
	y.Release()
	for _, h := range handles {
		h.Release()
	}
	if got := dev.Stats().ByTag[device.Activation].Current - before; got != saved+4 {
		t.Errorf("%s: graph holds %d activation bytes with every handle released, want %d (saved) + 4 (loss)", name, got, saved)
	}
	if err := loss.Backward(); err != nil {
		t.Fatal(err)
	}
	st = dev.Stats()
	if got := st.ByTag[device.Activation].Current - before; got != 4 {
		t.Errorf("%s: %d activation bytes after backward, want 4 (the loss)", name, got)
	}
	if got := st.ByTag[device.Gradient].Current; got != x.Bytes() {
		t.Errorf("%s: gradient bytes %d, want %d", name, got, x.Bytes())
	}
	s.Release()
	x.Release()
}

func inputBytes(ts []*autograd.Tensor) int64 {
	var n int64
	for _, t := range ts {
		n += t.Bytes()
	}
	return n
}

func TestIndexMemory(t *testing.T) {
	run := func(dev *device.Device) {
		// IndexSelect (5, 6) → (5, 4) along dim 1: out 5·4·4 bytes, saves the
		// 4 I64 indices (32 bytes, an input of the step).
		iaMemory(t, dev, "index_select", []int{5, 6}, 80, 32, func(s *autograd.Scope, x *autograd.Tensor) (*autograd.Tensor, []*autograd.Tensor) {
			idx := iaIdx(s, dev, false, []int{4}, 5, 0, 0, 3)
			return autograd.IndexSelect(x, 1, idx), []*autograd.Tensor{idx}
		})
		// Embedding (10, 3) with (2, 3) I32 indices: out 6·3·4, saves 24 bytes.
		iaMemory(t, dev, "embedding", []int{10, 3}, 72, 24, func(s *autograd.Scope, x *autograd.Tensor) (*autograd.Tensor, []*autograd.Tensor) {
			idx := iaIdx(s, dev, true, []int{2, 3}, 9, 0, 9, 1, 2, 3)
			return autograd.Embedding(x, idx), []*autograd.Tensor{idx}
		})
		// Gather (3, 4) with (3, 2) indices along dim 1: out 24, saves 48.
		iaMemory(t, dev, "gather", []int{3, 4}, 24, 48, func(s *autograd.Scope, x *autograd.Tensor) (*autograd.Tensor, []*autograd.Tensor) {
			idx := iaIdx(s, dev, false, []int{3, 2}, 0, 3, 1, 1, 2, 0)
			return autograd.Gather(x, 1, idx), []*autograd.Tensor{idx}
		})
		// Gather from the (4, 2, 1) part of a (4, 3, 3) input: a transient
		// workspace copy of the part, out 2·2·1·4 bytes, saves 32.
		iaMemory(t, dev, "gather_part", []int{4, 3, 3}, 16, 32, func(s *autograd.Scope, x *autograd.Tensor) (*autograd.Tensor, []*autograd.Tensor) {
			idx := iaIdx(s, dev, false, []int{2, 2, 1}, 3, 0, 1, 1)
			return autograd.Gather(x, 0, idx), []*autograd.Tensor{idx}
		})
	}
	iaStatsEqual(t, "index ops", run)
}

// TestIndexOutOfRangeSkippedOnMeta: meta holds no index values, so it
// cannot check them and runs the op.
func TestIndexOutOfRangeSkippedOnMeta(t *testing.T) {
	dev := meta.New(0, device.Options{})
	s := autograd.NewScope()
	w := s.Zeros(dev, dtype.F32, 4, 2)
	if err := autograd.Try(func() { autograd.Embedding(w, iaIdx(s, dev, false, []int{1}, 99)) }); err != nil {
		t.Errorf("embedding on meta: %v", err)
	}
	s.Release()
}

func TestIndexBadInput(t *testing.T) {
	dev := cpu.New(0, device.Options{})
	s := autograd.NewScope()
	defer s.Release()
	x := s.Zeros(dev, dtype.F32, 3, 4)
	cases := []struct {
		name string
		f    func()
		want []string
	}{
		{"out_of_range", func() { autograd.IndexSelect(x, 1, iaIdx(s, dev, false, []int{2}, 1, 4)) },
			[]string{"index_select", "index 4", "size 4", "[3 4]"}},
		{"negative", func() { autograd.Embedding(x, iaIdx(s, dev, true, []int{2, 2}, 0, 1, 2, -1)) },
			[]string{"embedding", "index -1", "[1 1]", "vocabulary of size 3"}},
		{"gather_out_of_range", func() { autograd.Gather(x, 0, iaIdx(s, dev, false, []int{1, 2}, 0, 3)) },
			[]string{"gather", "index 3", "size 3"}},
		{"2d_indices", func() { autograd.IndexSelect(x, 0, iaIdx(s, dev, false, []int{1, 1}, 0)) },
			[]string{"index_select", "[1 1]", "[3 4]", "1-D"}},
		{"float_indices", func() { autograd.IndexSelect(x, 0, s.Zeros(dev, dtype.F32, 2)) },
			[]string{"index_select", "f32", "i64 or i32"}},
		{"embedding_weight_rank", func() { autograd.Embedding(s.Zeros(dev, dtype.F32, 5), iaIdx(s, dev, false, []int{1}, 0)) },
			[]string{"embedding", "[5]", "(V, C)"}},
		{"gather_rank", func() { autograd.Gather(x, 1, iaIdx(s, dev, false, []int{2}, 0, 0)) },
			[]string{"gather", "[2]", "[3 4]", "same rank"}},
		{"gather_too_big", func() { autograd.Gather(x, 1, iaIdx(s, dev, false, []int{4, 1}, 0, 0, 0, 0)) },
			[]string{"gather", "[4 1]", "[3 4]", "exceeds"}},
		{"bad_dim", func() { autograd.IndexSelect(x, 2, iaIdx(s, dev, false, []int{1}, 0)) },
			[]string{"index_select", "axis 2"}},
	}
	for _, c := range cases {
		iaWantError(t, c.name, c.f, c.want...)
	}
}

// iaWantError checks that f panics with an *autograd.Error whose message
// contains every want.
func iaWantError(t *testing.T, name string, f func(), want ...string) {
	t.Helper()
	err := autograd.Try(f)
	var ae *autograd.Error
	if !errors.As(err, &ae) {
		t.Errorf("%s: err = %v, want *autograd.Error", name, err)
		return
	}
	for _, w := range want {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("%s: error %q does not mention %q", name, err, w)
		}
	}
}
