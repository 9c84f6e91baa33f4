package checkpoint_test

import (
	"errors"
	"math"
	"testing"

	"github.com/headroom-ml/headroom/autograd"
	"github.com/headroom-ml/headroom/checkpoint"
	"github.com/headroom-ml/headroom/device"
	"github.com/headroom-ml/headroom/device/cpu"
	"github.com/headroom-ml/headroom/dtype"
	"github.com/headroom-ml/headroom/nn"
)

// TestOffloadRetainGraphTwice: a second backward through a retained graph
// fetches the host copies again and accumulates exactly twice the plain
// gradients (bitwise: x+x is exact), leaving nothing behind.
func TestOffloadRetainGraphTwice(t *testing.T) {
	dev := cpu.New(0, device.Options{})
	host := cpu.New(100, device.Options{})
	plain := newModel(dev, dtype.F64, 4, 6, false)
	off := newModel(dev, dtype.F64, 4, 6, false)
	defer plain.release()
	defer off.release()
	_, g1, _ := step(t, dev, plain, 0, dtype.F64, dtype.Invalid)
	o := &checkpoint.Offload{Host: host}
	s := autograd.NewScope()
	x := s.Full(dev, dtype.F64, 0.5, 8, 6)
	xs := make([]float64, 8*6)
	for i := range xs {
		xs[i] = math.Sin(float64(i))
	}
	x.SetFloat64s(xs)
	loss := o.Forward(off.layers, x).Pow(2).Mean(false)
	if err := loss.Backward(autograd.RetainGraph()); err != nil {
		t.Fatal(err)
	}
	if err := loss.Backward(); err != nil {
		t.Fatal(err)
	}
	var i int
	for _, b := range off.blocks {
		for _, p := range b.Params() {
			for j, v := range p.T.Grad().Float64s() {
				if v != 2*g1[i][j] {
					t.Fatalf("parameter %d[%d]: gradient after two backwards %v, want 2×%v", i, j, v, g1[i][j])
				}
			}
			i++
		}
	}
	if st := o.Stats(); st.Fetched != 2*st.Offloaded {
		t.Errorf("fetched %d B over two backwards, offloaded %d B: want twice", st.Fetched, st.Offloaded)
	}
	s.Release()
	if host.LiveBlocks() != 0 {
		t.Fatalf("host leak: %v", host.Live())
	}
}

// TestOffloadOutOfMemoryAtEachAllocation fails the step's n-th device
// allocation for every n, in the forward and in backward's fetches: the
// step returns the out-of-memory error (no hang waiting for a copy that
// never started), both devices are empty once the scope is released, and
// the next step's gradients are plain's bit for bit.
func TestOffloadOutOfMemoryAtEachAllocation(t *testing.T) {
	dev := cpu.New(0, device.Options{})
	host := cpu.New(100, device.Options{})
	plain := newModel(dev, dtype.F32, 4, 6, false)
	defer plain.release()
	_, want, _ := step(t, dev, plain, 0, dtype.F32, dtype.Invalid)
	failed := 0
	for n := 1; ; n++ {
		m := newModel(dev, dtype.F32, 4, 6, false)
		o := &checkpoint.Offload{Host: host}
		s := autograd.NewScope()
		dev.InjectOOM(n)
		err := autograd.Try(func() {
			x := s.Full(dev, dtype.F32, 0.5, 8, 6)
			if err := o.Forward(m.layers, x).Pow(2).Mean(false).Backward(); err != nil {
				panic(err)
			}
		})
		dev.InjectOOM(0)
		s.Release()
		for _, b := range m.blocks {
			for _, p := range b.Params() {
				p.T.ZeroGrad()
			}
		}
		if host.LiveBlocks() != 0 {
			t.Fatalf("allocation %d failed (%v): the host still holds %v", n, err, host.Live())
		}
		if err == nil { // n is past the step's last allocation
			m.release()
			break
		}
		var oom *device.OOMError
		if !errors.As(err, &oom) {
			t.Fatalf("allocation %d: error %v, want an *device.OOMError", n, err)
		}
		failed++
		m.release()
		if dev.LiveBlocks() != 1*len(plain.blocks)*2 { // plain's parameters only
			t.Fatalf("allocation %d failed: the device holds %v", n, dev.Live())
		}
	}
	t.Logf("failed the step at each of its %d device allocations", failed)
	m := newModel(dev, dtype.F32, 4, 6, false)
	defer m.release()
	o := &checkpoint.Offload{Host: host}
	_, got, _ := stepWith(t, dev, m, dtype.F32, dtype.Invalid, func(x *autograd.Tensor) *autograd.Tensor { return o.Forward(m.layers, x) })
	sameBits(t, "after the failed steps", 0, 0, want, got)
}

// rewritten saves a tensor, writes it in place, and saves it again: the
// first save's op is never differentiated (its result is dropped), so
// plain autograd accepts it, and the second must see the new values.
type rewritten struct{ w1, w2 *autograd.Tensor }

func (r rewritten) Forward(x *autograd.Tensor) *autograd.Tensor {
	s := x.Scope()
	a := x.Mul(x)
	dead := a.Mul(s.Use(r.w1)) // saves a as it is now
	dead.Release()
	a.ScaleInPlace(3)
	y := a.Mul(s.Use(r.w2)) // saves a as rewritten
	a.Release()
	return y
}

func (r rewritten) Params() []nn.Param {
	return []nn.Param{{Name: "w1", T: r.w1}, {Name: "w2", T: r.w2}}
}

func (r rewritten) Train(bool) {}

// TestOffloadSeesInPlaceWrites: a view saved twice with a write in between
// is two tensors to the offloader, so the gradients stay plain's.
func TestOffloadSeesInPlaceWrites(t *testing.T) {
	dev := cpu.New(0, device.Options{})
	host := cpu.New(100, device.Options{})
	var ls []nn.Layer
	var ws []*autograd.Tensor
	for range 2 {
		r := rewritten{autograd.Param(dev, dtype.F64, "w1", 4), autograd.Param(dev, dtype.F64, "w2", 4)}
		r.w1.SetFloat64s([]float64{0.5, -1, 2, 0.25})
		r.w2.SetFloat64s([]float64{1.5, 0.5, -0.75, 1})
		ls, ws = append(ls, r), append(ws, r.w1, r.w2)
	}
	defer func() {
		for _, w := range ws {
			w.Release()
		}
	}()
	grads := func(run func([]nn.Layer, *autograd.Tensor) *autograd.Tensor) []float64 {
		s := autograd.NewScope()
		defer s.Release()
		x := s.FromFloat64s(dev, []int{4}, []float64{0.3, -0.6, 0.9, 1.2})
		if err := run(ls, x).Sum(false).Backward(); err != nil {
			t.Fatal(err)
		}
		var g []float64
		for _, w := range ws {
			if w.Grad() != nil {
				g = append(g, w.Grad().Float64s()...)
			}
			w.ZeroGrad()
		}
		return g
	}
	plain := grads(func(ls []nn.Layer, x *autograd.Tensor) *autograd.Tensor { return nn.NewSequential(ls...).Forward(x) })
	o := &checkpoint.Offload{Host: host}
	got := grads(o.Forward)
	if len(got) != len(plain) {
		t.Fatalf("%d gradients offloaded, %d plain", len(got), len(plain))
	}
	for i := range plain {
		if got[i] != plain[i] {
			t.Fatalf("gradient %d = %v offloaded, plain %v (a stale host copy?)", i, got[i], plain[i])
		}
	}
}
