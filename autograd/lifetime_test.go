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

// expChain runs loss = Σ exp(exp(…exp(x))) with l exps in scope s,
// releasing each intermediate handle as a module would, and returns loss.
func expChain(s *autograd.Scope, x *autograd.Tensor, l int) *autograd.Tensor {
	h := s.Use(x)
	for range l {
		sc := h.Scale(0.5) // saves nothing
		n := sc.Exp()      // saves its output
		sc.Release()
		h.Release()
		h = n
	}
	loss := h.Sum(false)
	h.Release()
	return loss
}

func TestBackwardFreesSavedTensorsEagerly(t *testing.T) {
	const n, l = 1000, 6
	dev := cpu.New(0, device.Options{})
	x := autograd.Param(dev, dtype.F64, "x", n)
	x.Fill(0.1)
	s := autograd.NewScope()
	loss := expChain(s, x, l)

	st := dev.Stats()
	act := st.ByTag[device.Activation]
	// Each exp output (n·8 bytes) is saved; the scale outputs were released
	// and are not saved; the loss is 8 bytes.
	if want := int64(l*n*8 + 8); act.Current != want {
		t.Fatalf("activation bytes after forward = %d, want %d", act.Current, want)
	}
	dev.ResetPeak()
	if err := loss.Backward(); err != nil {
		t.Fatal(err)
	}
	st = dev.Stats()
	if got := st.ByTag[device.Activation].Current; got != 8 {
		t.Errorf("activation bytes after backward = %d, want 8 (the loss): saved tensors were not freed", got)
	}
	if got := st.ByTag[device.Workspace].Current; got != 0 {
		t.Errorf("workspace bytes after backward = %d, want 0", got)
	}
	if got := st.ByTag[device.Gradient].Current; got != n*8 {
		t.Errorf("gradient bytes = %d, want %d", got, n*8)
	}
	// Freed as it goes: at most two activation-gradients and one scaled
	// gradient are alive at once besides the seed, so workspace never holds
	// all l gradients, and the total never exceeds the forward's activations
	// plus three gradient buffers.
	if peak := st.ByTag[device.Workspace].Peak; peak > 3*n*8+8 {
		t.Errorf("workspace peak during backward = %d, want ≤ %d", peak, 3*n*8+8)
	}
	if peak := st.Requested.Peak; peak > int64(l*n*8+8+3*n*8+8+n*8) {
		t.Errorf("total peak during backward = %d: saved tensors outlived their use", peak)
	}
	s.Release()
	x.Release()
	if n := dev.LiveBlocks(); n != 0 {
		t.Errorf("live blocks after release: %v", dev.Live())
	}
}

func TestRetainGraphAndSecondBackward(t *testing.T) {
	dev := cpu.New(0, device.Options{})
	x := autograd.Param(dev, dtype.F64, "x", 4)
	x.SetFloat64s([]float64{0, 1, 2, 3})
	s := autograd.NewScope()
	defer s.Release()
	loss := expChain(s, x, 2)
	if err := loss.Backward(autograd.RetainGraph()); err != nil {
		t.Fatal(err)
	}
	g1 := x.Grad().Float64s()
	if err := loss.Backward(); err != nil {
		t.Fatalf("second backward with the graph retained: %v", err)
	}
	g2 := x.Grad().Float64s()
	for i := range g1 {
		if g2[i] != 2*g1[i] {
			t.Errorf("grad[%d] after two backwards = %v, want 2×%v", i, g2[i], g1[i])
		}
	}
	err := loss.Backward()
	var ae *autograd.Error
	if !errors.As(err, &ae) || !strings.Contains(err.Error(), "second time") {
		t.Errorf("third backward on a freed graph: err = %v, want *autograd.Error about a second time", err)
	}
	x.Release()
}

func TestInPlaceModificationOfSavedTensorIsDetected(t *testing.T) {
	dev := cpu.New(0, device.Options{})
	x := autograd.Param(dev, dtype.F32, "x", 3)
	s := autograd.NewScope()
	defer s.Release()
	y := s.Use(x).Exp() // saves y
	loss := y.Sum(false)
	y.Fill(0)
	err := loss.Backward()
	if err == nil || !strings.Contains(err.Error(), "modified in place") {
		t.Fatalf("err = %v, want a modified-in-place error", err)
	}
	x.Release()
}

func TestNoGradSavesNothing(t *testing.T) {
	dev := cpu.New(0, device.Options{})
	x := autograd.Param(dev, dtype.F32, "x", 100)
	s := autograd.NewScope()
	var y *autograd.Tensor
	s.NoGrad(func() { y = s.Use(x).Exp().Sum(false) })
	if y.RequiresGrad() {
		t.Error("result of NoGrad requires grad")
	}
	// Exp's output is held by its handle (owned by the scope) and nothing
	// else; releasing the scope frees it and the sum.
	s.Release()
	if got := dev.Stats().ByTag[device.Activation].Current; got != 0 {
		t.Errorf("activation bytes after Release = %d, want 0", got)
	}
	x.Release()
}

func TestDetachCutsGradient(t *testing.T) {
	dev := cpu.New(0, device.Options{})
	x := autograd.Param(dev, dtype.F64, "x", 2)
	x.SetFloat64s([]float64{1, 2})
	s := autograd.NewScope()
	defer s.Release()
	xs := s.Use(x)
	// d/dx (x·detach(x)) = detach(x) = x
	loss := xs.Mul(xs.Detach()).Sum(false)
	if err := loss.Backward(); err != nil {
		t.Fatal(err)
	}
	if g := x.Grad().Float64s(); g[0] != 1 || g[1] != 2 {
		t.Errorf("grad = %v, want [1 2]", g)
	}
	x.Release()
}

func TestScopeReleaseAndKeep(t *testing.T) {
	dev := cpu.New(0, device.Options{})
	s := autograd.NewScope()
	a := s.Zeros(dev, dtype.F32, 10)
	b := a.AddScalar(1)
	kept := s.Keep(b.Exp())
	if s.Owned() != 2 {
		t.Errorf("Owned = %d, want 2", s.Owned())
	}
	s.Release()
	if got := dev.CurrentBytes(); got != 40 {
		t.Errorf("bytes after Release = %d, want 40 (the kept tensor)", got)
	}
	if v := kept.Float32s()[0]; v < 2.718 || v > 2.719 {
		t.Errorf("kept value = %v, want e", v)
	}
	kept.Release()
	if dev.LiveBlocks() != 0 {
		t.Errorf("leak: %v", dev.Live())
	}
	// a released tensor cannot be used
	err := autograd.Try(func() { a.Exp() })
	if err == nil || !strings.Contains(err.Error(), "after Release") {
		t.Errorf("use after release: err = %v", err)
	}
}

func TestOrphanOpFailsClearly(t *testing.T) {
	dev := cpu.New(0, device.Options{})
	w := autograd.Param(dev, dtype.F32, "wpe", 4, 2)
	err := autograd.Try(func() { w.Slice(0, 0, 2) })
	if err == nil || !strings.Contains(err.Error(), "Scope.Use") || !strings.Contains(err.Error(), "wpe") {
		t.Errorf("slice of a parameter outside a scope: err = %v, want advice naming wpe and Scope.Use", err)
	}
	d := w.Detach() // allowed: no gradient wanted
	v := d.Slice(0, 0, 2)
	v.Release()
	d.Release()
	w.Release()
}

func TestSavedTensorHooksOffload(t *testing.T) {
	const n, l = 256, 4
	gpu := cpu.New(0, device.Options{}) // the device being relieved
	host := cpu.New(1, device.Options{})
	run := func(hooks bool) ([]float64, int64) {
		x := autograd.Param(gpu, dtype.F64, "x", n)
		x.Fill(0.2)
		defer x.Release()
		s := autograd.NewScope()
		defer s.Release()
		if hooks {
			s.PushSavedHooks(autograd.SavedHooks{
				Pack: func(t *autograd.Tensor) any {
					c := t.To(host)
					t.Release()
					return c
				},
				Unpack: func(p any) *autograd.Tensor { return p.(*autograd.Tensor).To(gpu) },
				Free:   func(p any) { p.(*autograd.Tensor).Release() },
			})
		}
		gpu.ResetPeak()
		loss := expChain(s, x, l)
		actAfterForward := gpu.Stats().ByTag[device.Activation].Current + gpu.Stats().ByTag[device.Other].Current
		if err := loss.Backward(); err != nil {
			t.Fatal(err)
		}
		return x.Grad().Float64s(), actAfterForward
	}
	plain, plainBytes := run(false)
	off, offBytes := run(true)
	if d := autogradtest.MaxDiff(plain, off); d != 0 {
		t.Errorf("offloaded gradients differ by %g", d)
	}
	if plainBytes != l*n*8+8 || offBytes != 8 {
		t.Errorf("bytes held on the compute device after forward: plain %d (want %d), offloaded %d (want 8)", plainBytes, l*n*8+8, offBytes)
	}
	if host.LiveBlocks() != 0 || gpu.LiveBlocks() != 0 {
		t.Errorf("leaks: host %v, gpu %v", host.Live(), gpu.Live())
	}
}

func TestMetaMatchesCPUForComposedOps(t *testing.T) {
	step := func(dev *device.Device) device.Stats {
		w1 := autograd.Param(dev, dtype.F32, "w1", 16, 8)
		w2 := autograd.Param(dev, dtype.F32, "w2", 4, 16)
		s := autograd.NewScope()
		x := s.Zeros(dev, dtype.F32, 5, 3, 8)
		h := autograd.Linear(x, w1, nil).ReLU()
		y := autograd.Linear(h, w2, nil).Permute(0, 2, 1)
		z := y.MatMul(y.Transpose(1, 2)).Slice(1, 1, 3).Reshape(5, -1).Tanh()
		loss := z.Mean(false).Add(y.Max(false, 2).Sum(false))
		if err := loss.Backward(); err != nil {
			t.Fatal(err)
		}
		s.Release()
		st := dev.Stats()
		w1.Release()
		w2.Release()
		return st
	}
	c := step(cpu.New(0, device.Options{}))
	m := step(meta.New(0, device.Options{}))
	c.Device, m.Device = "", ""
	if c != m {
		t.Errorf("meta stats differ from cpu:\ncpu  %+v\nmeta %+v", c, m)
	}
}

func TestOOMInsideStepLeavesDeviceUsable(t *testing.T) {
	dev := cpu.New(0, device.Options{Capacity: 4 << 20})
	w := autograd.Param(dev, dtype.F32, "w", 256, 256)
	before := dev.CurrentBytes()
	s := autograd.NewScope()
	err := autograd.Try(func() {
		x := s.Zeros(dev, dtype.F32, 1024, 256)
		for range 100 {
			x = autograd.Linear(x, w, nil) // each output 1 MiB: runs out
		}
	})
	var oom *device.OOMError
	if !errors.As(err, &oom) {
		t.Fatalf("err = %v, want *device.OOMError", err)
	}
	if oom.LargestTag() != device.Activation || !strings.Contains(oom.Error(), "activation") {
		t.Errorf("OOM should blame activations: %v", oom)
	}
	s.Release()
	if got := dev.CurrentBytes(); got != before {
		t.Errorf("bytes after the failed step's release = %d, want %d", got, before)
	}
	s2 := autograd.NewScope()
	y := autograd.Linear(s2.Zeros(dev, dtype.F32, 4, 256), w, nil)
	if y.Len() != 1024 {
		t.Error("device unusable after OOM")
	}
	s2.Release()
	w.Release()
	if dev.LiveBlocks() != 0 {
		t.Errorf("leak: %v", dev.Live())
	}
}
