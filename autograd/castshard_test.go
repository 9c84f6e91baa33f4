package autograd_test

import (
	"fmt"
	"testing"

	"github.com/headroom-ml/headroom/autograd"
	"github.com/headroom-ml/headroom/device"
	"github.com/headroom-ml/headroom/device/cpu"
	"github.com/headroom-ml/headroom/dtype"
)

// TestAutocastCastOfFetchedLeafLivesWithItsBinding runs y =
// Linear(tanh(Linear(x, w)), w) under BF16 autocast with one F32 weight
// (3×3) used twice, plain and as a fetched leaf whose buffer is freed
// between the two uses and after the forward (as ZeRO-3 frees a gathered
// bucket) and which is saved by reference through its own hooks. The
// fetched leaf's cast must hold its 2·9 bytes (tagged parameter) only
// while the leaf is bound: none after each Unbind, none between forward
// and backward, though both Linears saved it. Backward fetches the leaf
// again (once: nothing unbinds it there) and casts it for each saved use
// from what its hooks unpack; the gradient must equal the plain run's
// bit for bit (one cast node per step sums both uses, as with the cache).
func TestAutocastCastOfFetchedLeafLivesWithItsBinding(t *testing.T) {
	dev := cpu.New(0, device.Options{})
	x0 := []float32{0.5, -1, 2, 1, 0.25, -0.5}
	wv := []float32{0.1, -0.2, 0.3, 0.4, 0.5, -0.6, 0.7, 0.8, -0.9}
	cast := func() int64 { return dev.Stats().ByTag[device.Parameter].Current }
	type run struct {
		grad                 []float32
		afterUnbind, between int64
		fetches, packs, free int
	}
	grads := func(sharded bool) (r run) {
		w := autograd.Param(dev, dtype.F32, "w", 3, 3)
		w.SetFloat32s(wv)
		defer w.Release()
		var buf *autograd.Tensor
		unbind := func() {
			w.Unbind()
			buf.Release()
		}
		if sharded {
			w.Unbind() // its storage was tagged parameter: from now on only casts are
			w.SetFetch(func(*autograd.Tensor) {
				r.fetches++
				buf = autograd.New(dev, dtype.F32, device.Communication, 9)
				buf.SetFloat32s(wv)
				v := window(buf, 0, 3, 3)
				w.Bind(v)
				v.Release()
			})
			w.SetSavedHooks(&autograd.SavedHooks{
				Pack:   func(h *autograd.Tensor) any { r.packs++; h.Release(); return nil },
				Unpack: func(any) *autograd.Tensor { return w.Detach() },
				Free:   func(any) { r.free++ },
			})
		}
		s := autograd.NewScope()
		defer s.Release()
		var y *autograd.Tensor
		s.Autocast(dtype.BF16, func() {
			h := autograd.Linear(s.FromFloat32s(dev, []int{2, 3}, x0).SetRequiresGrad(true), w, nil).Tanh()
			if sharded {
				unbind()
				r.afterUnbind = cast()
			}
			y = autograd.Linear(h, w, nil)
		})
		if sharded {
			unbind()
			r.between = cast()
		}
		if err := y.Mul(y).Sum(false).Backward(); err != nil {
			t.Fatal(err)
		}
		if sharded && !w.Unbound() {
			unbind()
		}
		r.grad = w.Grad().Float32s()
		return r
	}
	plain, got := grads(false), grads(true)
	if fmt.Sprint(got.grad) != fmt.Sprint(plain.grad) {
		t.Errorf("gradient of the fetched weight %v, plain %v", got.grad, plain.grad)
	}
	if got.afterUnbind != 0 || got.between != 0 {
		t.Errorf("cast bytes after the first Unbind %d, between forward and backward %d: want 0 and 0", got.afterUnbind, got.between)
	}
	if got.fetches != 3 || got.packs != 2 || got.free != 2 {
		t.Errorf("%d fetches, %d packs, %d frees: want 3 (two in forward, one in backward, which keeps it bound), 2, 2", got.fetches, got.packs, got.free)
	}
	if n := dev.LiveBlocks(); n != 0 {
		t.Errorf("%d blocks live at the end: %v", n, dev.Live())
	}
}
