package autograd_test

import (
	"strings"
	"testing"

	"github.com/headroom-ml/headroom/autograd"
	"github.com/headroom-ml/headroom/device"
	"github.com/headroom-ml/headroom/device/cpu"
	"github.com/headroom-ml/headroom/dtype"
)

// TestOnGradReadyFiresOnceAfterTheLastContribution uses w twice (tied):
// the hook must run once per backward, when both contributions are in.
func TestOnGradReadyFiresOnceAfterTheLastContribution(t *testing.T) {
	dev := cpu.New(0, device.Options{})
	w := autograd.Param(dev, dtype.F64, "w", 3)
	v := autograd.Param(dev, dtype.F64, "v", 3)
	w.SetFloat64s([]float64{1, 2, 3})
	v.SetFloat64s([]float64{1, 1, 1})
	var seen [][]float64
	var order []string
	remove := w.OnGradReady(func(l *autograd.Tensor) {
		seen = append(seen, l.Grad().Float64s())
		order = append(order, "w")
	})
	v.OnGradReady(func(*autograd.Tensor) { order = append(order, "v") })
	for range 2 {
		s := autograd.NewScope()
		ws := s.Use(w)
		// loss = Σ w·w + Σ w·v: dL/dw = 2w + v
		loss := ws.Mul(ws).Sum(false).Add(ws.Mul(s.Use(v)).Sum(false))
		if err := loss.Backward(); err != nil {
			t.Fatal(err)
		}
		s.Release()
		w.ZeroGrad()
		v.ZeroGrad()
	}
	if len(seen) != 2 {
		t.Fatalf("hook ran %d times in two backwards, want 2", len(seen))
	}
	if g := seen[0]; g[0] != 3 || g[1] != 5 || g[2] != 7 {
		t.Errorf("gradient when the hook ran = %v, want the complete [3 5 7]", g)
	}
	remove()
	s := autograd.NewScope()
	if err := s.Use(w).Sum(false).Backward(); err != nil {
		t.Fatal(err)
	}
	s.Release()
	if len(seen) != 2 {
		t.Errorf("removed hook still runs")
	}
	w.Release()
	v.Release()
	_ = order
}

// TestFlatParametersAndGradients puts two parameters and their gradients
// into flat buffers and checks that training uses them in place.
func TestFlatParametersAndGradients(t *testing.T) {
	dev := cpu.New(0, device.Options{})
	a := autograd.Param(dev, dtype.F32, "a", 2, 2)
	b := autograd.Param(dev, dtype.F32, "b", 3)
	a.SetFloat32s([]float32{1, 2, 3, 4})
	b.SetFloat32s([]float32{5, 6, 7})
	flat := autograd.New(dev, dtype.F32, device.Parameter, 7)
	grads := autograd.New(dev, dtype.F32, device.Gradient, 7)
	before := dev.Stats().ByTag[device.Parameter].Current
	view := func(buf *autograd.Tensor, lo, hi int, shape ...int) *autograd.Tensor {
		sl := buf.Slice(0, lo, hi)
		defer sl.Release()
		return sl.Reshape(shape...)
	}
	av, bv := view(flat, 0, 4, 2, 2), view(flat, 4, 7, 3)
	a.MoveInto(av)
	b.MoveInto(bv)
	av.Release()
	bv.Release()
	if got := dev.Stats().ByTag[device.Parameter].Current; got != before-7*4 {
		t.Errorf("parameter bytes %d after moving into the flat buffer, want %d (the old blocks freed)", got, before-7*4)
	}
	if f := flat.Float32s(); f[0] != 1 || f[4] != 5 || f[6] != 7 {
		t.Errorf("flat buffer %v", f)
	}
	a.SetGrad(view(grads, 0, 4, 2, 2))
	b.SetGrad(view(grads, 4, 7, 3))
	s := autograd.NewScope()
	loss := s.Use(a).Sum(false).Add(s.Use(b).Scale(2).Sum(false))
	if err := loss.Backward(); err != nil {
		t.Fatal(err)
	}
	s.Release()
	if g := grads.Float32s(); g[0] != 1 || g[3] != 1 || g[4] != 2 || g[6] != 2 {
		t.Errorf("flat gradients %v, want [1 1 1 1 2 2 2]", g)
	}
	if dev.Stats().ByTag[device.Gradient].Current != 7*4 {
		t.Errorf("gradient bytes %d: backward allocated gradients outside the flat buffer", dev.Stats().ByTag[device.Gradient].Current)
	}
	a.AddInPlace(a.Grad(), -1)
	if f := flat.Float32s(); f[0] != 0 || f[3] != 3 {
		t.Errorf("update through the parameter did not reach the flat buffer: %v", f)
	}
	for _, x := range []*autograd.Tensor{a, b, flat, grads} {
		x.Release()
	}
	if dev.LiveBlocks() != 0 {
		t.Errorf("leak: %v", dev.Live())
	}
}

// TestSetGradAllocTakesTheGradientFromTheCaller gives a leaf used twice a
// gradient source: it must be called once per pass (after ZeroGrad), at
// the first contribution, and both contributions must land in its view.
func TestSetGradAllocTakesTheGradientFromTheCaller(t *testing.T) {
	dev := cpu.New(0, device.Options{})
	w := autograd.Param(dev, dtype.F64, "w", 2)
	w.SetFloat64s([]float64{1, 2})
	buf := autograd.New(dev, dtype.F64, device.Communication, 5)
	calls := 0
	w.SetGradAlloc(func(l *autograd.Tensor) *autograd.Tensor {
		calls++
		v := buf.Slice(0, 3, 5)
		v.Fill(0)
		return v
	})
	for pass := range 2 {
		s := autograd.NewScope()
		ws := s.Use(w)
		// loss = Σ w² + 3·Σ w: dL/dw = 2w + 3
		loss := ws.Mul(ws).Sum(false).Add(ws.Scale(3).Sum(false))
		if err := loss.Backward(); err != nil {
			t.Fatal(err)
		}
		s.Release()
		if calls != pass+1 {
			t.Errorf("pass %d: source called %d times, want %d", pass, calls, pass+1)
		}
		if g := buf.Float64s(); g[3] != 5 || g[4] != 7 || g[0] != 0 {
			t.Errorf("pass %d: buffer %v, want [0 0 0 5 7]", pass, g)
		}
		if w.Grad().Offset() != 3 {
			t.Errorf("gradient offset %d, want 3", w.Grad().Offset())
		}
		w.ZeroGrad()
	}
	if dev.Stats().ByTag[device.Gradient].Peak != 0 {
		t.Errorf("backward allocated %d gradient bytes beside the source", dev.Stats().ByTag[device.Gradient].Peak)
	}
	w.SetGradAlloc(func(*autograd.Tensor) *autograd.Tensor { return autograd.New(dev, dtype.F32, device.Gradient, 2) })
	s := autograd.NewScope()
	err := s.Use(w).Sum(false).Backward()
	s.Release()
	if err == nil || !strings.Contains(err.Error(), "want the leaf's shape, dtype and device") {
		t.Errorf("a source of the wrong dtype: err = %v", err)
	}
	w.SetGradAlloc(nil)
	w.Release()
	buf.Release()
	if dev.LiveBlocks() != 0 {
		t.Errorf("leak: %v", dev.Live())
	}
}

// TestOnGradReadyWithNestedPasses: a leaf used directly and inside a custom
// node whose backward runs a nested pass (as checkpointing does) gets its
// hook once, after all contributions (the value it sees is complete),
// whichever pass makes the last one.
func TestOnGradReadyWithNestedPasses(t *testing.T) {
	dev := cpu.New(0, device.Options{})
	w := autograd.Param(dev, dtype.F64, "w", 2)
	w.SetFloat64s([]float64{1, 2})
	var fired [][]float64
	w.OnGradReady(func(l *autograd.Tensor) { fired = append(fired, l.Grad().Float64s()) })
	s := autograd.NewScope()
	defer s.Release()
	x := s.Full(dev, dtype.F64, 3, 2)
	// out = custom(x) where custom(x) = x·w computed in a nested pass.
	var out *autograd.Tensor
	s.NoGrad(func() { out = x.Mul(s.Use(w)) })
	out = s.Adopt(out)
	autograd.Record(autograd.Custom{Name: "nested", Outs: []*autograd.Tensor{out}, Ins: []*autograd.Tensor{x}, RequiresGrad: true,
		Leaves: []*autograd.Tensor{w},
		Backward: func(grads, _ []*autograd.Tensor, need []bool) []*autograd.Tensor {
			c := s.Child()
			defer c.Release()
			var y *autograd.Tensor
			c.Recompute(func() { y = c.LeafOf(x).Mul(c.Use(w)) })
			if err := autograd.BackwardAll([]*autograd.Tensor{y}, []*autograd.Tensor{grads[0]}); err != nil {
				panic(err)
			}
			return []*autograd.Tensor{nil}
		}})
	// loss = Σ out + Σ w·w: dL/dw = x + 2w = [5 7]
	loss := out.Sum(false).Add(s.Use(w).Mul(s.Use(w)).Sum(false))
	if err := loss.Backward(); err != nil {
		t.Fatal(err)
	}
	if len(fired) != 1 || fired[0][0] != 5 || fired[0][1] != 7 {
		t.Errorf("hook runs %v, want once with [5 7]", fired)
	}
	w.Release()
}
