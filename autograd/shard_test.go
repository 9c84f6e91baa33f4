package autograd_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/headroom-ml/headroom/autograd"
	"github.com/headroom-ml/headroom/device"
	"github.com/headroom-ml/headroom/device/cpu"
	"github.com/headroom-ml/headroom/dtype"
)

// window returns a free-standing view of elements [lo, lo+numel(shape)) of
// the one-dimensional buf.
func window(buf *autograd.Tensor, lo int, shape ...int) *autograd.Tensor {
	n := 1
	for _, d := range shape {
		n *= d
	}
	s := buf.Slice(0, lo, lo+n)
	defer s.Release()
	return s.Reshape(shape...)
}

// TestBindAndUnbindKeepTheLeaf moves a Linear's weight between storages
// without copying: the leaf reads the bound buffer, Unbind frees its
// storage, a fetch function binds it on first use, the gradient reaches
// the same leaf, and a released leaf is never fetched again.
func TestBindAndUnbindKeepTheLeaf(t *testing.T) {
	dev := cpu.New(0, device.Options{})
	w := autograd.Param(dev, dtype.F64, "w", 2, 3)
	buf := autograd.New(dev, dtype.F64, device.Parameter, 8)
	buf.SetFloat64s([]float64{9, 1, 2, 3, 4, 5, 6, 9})
	v := window(buf, 1, 2, 3)
	w.Bind(v)
	v.Release()
	if got := dev.Stats().ByTag[device.Parameter].Current; got != 8*8 {
		t.Errorf("after Bind the parameter bytes are %d, want only the buffer's 64 (w's own block freed)", got)
	}
	if got := fmt.Sprint(w.Float64s()); got != "[1 2 3 4 5 6]" {
		t.Errorf("bound w reads %s, want the buffer's [1 2 3 4 5 6]", got)
	}
	w.Unbind()
	if !w.Released() || !w.Unbound() || !strings.Contains(w.String(), "unbound") {
		t.Errorf("after Unbind: Released %v, Unbound %v, %s", w.Released(), w.Unbound(), w)
	}
	s := autograd.NewScope()
	x := s.FromFloat64s(dev, []int{2, 3}, []float64{1, 0, 2, -1, 3, 1})
	err := autograd.Try(func() { autograd.Linear(x, w, nil) })
	if err == nil || !strings.Contains(err.Error(), "is unbound") {
		t.Errorf("Linear with an unbound weight and no fetch function: %v, want an error saying it is unbound", err)
	}
	fetched := 0
	w.SetFetch(func(l *autograd.Tensor) {
		fetched++
		v := window(buf, 1, 2, 3)
		l.Bind(v)
		v.Release()
	})
	y := autograd.Linear(x, w, nil) // y = x·wᵀ; Σy has ∂/∂w[i][j] = Σ_n x[n][j]
	if err := y.Sum(false).Backward(); err != nil {
		t.Fatal(err)
	}
	s.Release()
	if fetched != 1 {
		t.Errorf("fetch ran %d times, want 1", fetched)
	}
	if got := fmt.Sprint(w.Grad().Float64s()); got != "[0 3 3 0 3 3]" {
		t.Errorf("w's gradient %s, want [0 3 3 0 3 3]", got)
	}
	w.Release()
	s = autograd.NewScope()
	x = s.FromFloat64s(dev, []int{1, 3}, []float64{1, 2, 3})
	err = autograd.Try(func() { autograd.Linear(x, w, nil) })
	if err == nil || !strings.Contains(err.Error(), "used after Release") || fetched != 1 {
		t.Errorf("Linear with a released weight: %v after %d fetches, want used after Release and no fetch", err, fetched)
	}
	s.Release()
	buf.Release()
	if n := dev.LiveBlocks(); n != 0 {
		t.Errorf("%d blocks live at the end: %v", n, dev.Live())
	}
}

// TestLeafSavedHooksLetBackwardFetchAgain trains y = Linear(tanh(Linear(x,
// w1)), w2) with both weights in buffers that are freed right after the
// forward — the second Linear saves w2 through its own hooks (a reference,
// not its storage), so nothing pins the buffer — and backward fetches w2
// again through Unpack. The gradients must equal those of a plain run, the
// scope's hooks must see every saved tensor but w2, and Free must run once.
func TestLeafSavedHooksLetBackwardFetchAgain(t *testing.T) {
	dev := cpu.New(0, device.Options{})
	x0 := []float64{0.5, -1, 2, 1, 0.25, -0.5}
	w1v, w2v := []float64{0.1, -0.2, 0.3, 0.4, 0.5, -0.6}, []float64{1, -1, 0.5, 2}
	grads := func(sharded bool) (g1, g2 []float64, packs, frees, scopeSaves int, paramBytes int64) {
		w1 := autograd.Param(dev, dtype.F64, "w1", 2, 3)
		w2 := autograd.Param(dev, dtype.F64, "w2", 2, 2)
		w1.SetFloat64s(w1v)
		w2.SetFloat64s(w2v)
		defer w1.Release()
		defer w2.Release()
		var buf *autograd.Tensor
		bind := func() {
			buf = autograd.New(dev, dtype.F64, device.Communication, 4)
			buf.SetFloat64s(w2v)
			v := window(buf, 0, 2, 2)
			w2.Bind(v)
			v.Release()
		}
		if sharded {
			bind()
			w2.SetFetch(func(*autograd.Tensor) { bind() })
			w2.SetSavedHooks(&autograd.SavedHooks{
				Pack:   func(h *autograd.Tensor) any { packs++; h.Release(); return "w2" },
				Unpack: func(any) *autograd.Tensor { return w2.Detach() },
				Free:   func(any) { frees++ },
			})
		}
		s := autograd.NewScope()
		defer s.Release()
		s.PushSavedHooks(autograd.SavedHooks{
			Pack:   func(h *autograd.Tensor) any { scopeSaves++; return h },
			Unpack: func(p any) *autograd.Tensor { return p.(*autograd.Tensor).Detach() },
			Free:   func(p any) { p.(*autograd.Tensor).Release() },
		})
		x := s.FromFloat64s(dev, []int{2, 3}, x0)
		h := autograd.Linear(x, w1, nil).Tanh()
		y := autograd.Linear(h, w2, nil)
		if sharded { // the forward is done with w2: drop its storage
			w2.Unbind()
			buf.Release()
			paramBytes = dev.Stats().ByTag[device.Communication].Current
		}
		if err := y.Mul(y).Sum(false).Backward(); err != nil {
			t.Fatal(err)
		}
		if sharded {
			w2.Unbind()
			buf.Release()
		}
		return w1.Grad().Float64s(), w2.Grad().Float64s(), packs, frees, scopeSaves, paramBytes
	}
	r1, r2, _, _, plainSaves, _ := grads(false)
	g1, g2, packs, frees, scopeSaves, held := grads(true)
	if fmt.Sprint(g1, g2) != fmt.Sprint(r1, r2) {
		t.Errorf("gradients with w2 fetched again in backward %v %v, plain %v %v", g1, g2, r1, r2)
	}
	if packs != 1 || frees != 1 || scopeSaves != plainSaves-1 {
		t.Errorf("w2 packed %d and freed %d times, scope hooks saw %d tensors (plain %d): want 1, 1 and one fewer", packs, frees, scopeSaves, plainSaves)
	}
	if held != 0 {
		t.Errorf("between forward and backward %d bytes of w2's buffer stay alive, want 0", held)
	}
	t.Logf("scope hooks saw %d tensors, w2's own hooks 1", scopeSaves)
	if n := dev.LiveBlocks(); n != 0 {
		t.Errorf("%d blocks live at the end: %v", n, dev.Live())
	}
}

// TestFetchThatUnbindsAnotherInputFails gives a Linear a weight and a bias
// whose fetch functions unbind each other: the op must fail naming the
// input that lost its storage instead of reading freed memory.
func TestFetchThatUnbindsAnotherInputFails(t *testing.T) {
	dev := cpu.New(0, device.Options{})
	w := autograd.Param(dev, dtype.F32, "w", 2, 2)
	b := autograd.Param(dev, dtype.F32, "b", 2)
	defer w.Release()
	defer b.Release()
	fetch := func(mine, other *autograd.Tensor) func(*autograd.Tensor) {
		return func(*autograd.Tensor) {
			v := autograd.New(dev, dtype.F32, device.Communication, mine.Shape()...)
			mine.Bind(v)
			v.Release()
			other.Unbind()
		}
	}
	w.SetFetch(fetch(w, b))
	b.SetFetch(fetch(b, w))
	w.Unbind()
	b.Unbind()
	s := autograd.NewScope()
	defer s.Release()
	x := s.FromFloat32s(dev, []int{1, 2}, []float32{1, 2})
	err := autograd.Try(func() { autograd.Linear(x, w, b) })
	if err == nil || !strings.Contains(err.Error(), "named w) lost its storage") {
		t.Errorf("Linear whose bias fetch unbinds its weight: %v, want an error naming w", err)
	}
}
