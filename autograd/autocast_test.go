package autograd_test

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/headroom-ml/headroom/autograd"
	"github.com/headroom-ml/headroom/device"
	"github.com/headroom-ml/headroom/device/cpu"
	"github.com/headroom-ml/headroom/device/meta"
	"github.com/headroom-ml/headroom/dtype"
)

// autocastStep runs Linear→ReLU→Linear→cross-entropy with autocast to dt
// (Invalid: off) and returns the activation bytes at the end of forward,
// the loss and the first weight's gradient.
func autocastStep(t *testing.T, dev *device.Device, dt dtype.DType) (act int64, loss float64, g []float64) {
	const B, D, H, C = 32, 20, 64, 10
	m := newMLP(dev, D, H, C, 1)
	defer m.release()
	x, y := batch(rand.New(rand.NewPCG(2, 2)), B, D, C)
	s := autograd.NewScope()
	defer s.Release()
	var l *autograd.Tensor
	s.Autocast(dt, func() {
		xs := s.FromFloat32s(dev, []int{B, D}, x)
		ys := s.FromInt64s(dev, []int{B}, y)
		h := autograd.Linear(xs, m.w1, m.b1)
		r := h.ReLU()
		h.Release()
		logits := autograd.Linear(r, m.w2, m.b2)
		l = autograd.CrossEntropy(logits, ys, autograd.CEOptions{})
		logits.Release()
		r.Release()
	})
	act = dev.Stats().ByTag[device.Activation].Current
	if err := l.Backward(); err != nil {
		t.Fatal(err)
	}
	if m.w1.Grad().DType() != dtype.F32 {
		t.Errorf("autocast %s: parameter gradient has dtype %s, want f32", dt, m.w1.Grad().DType())
	}
	return act, l.Item(), m.w1.Grad().Float64s()
}

func TestAutocastHalvesSavedActivations(t *testing.T) {
	const B, D, H, C = 32, 20, 64, 10
	dev := cpu.New(0, device.Options{})
	act32, loss32, g32 := autocastStep(t, dev, dtype.Invalid)
	for _, dt := range []dtype.DType{dtype.BF16, dtype.F16} {
		act, loss, g := autocastStep(t, dev, dt)
		// Plain: x f32 (B·D·4, saved by linear1), y i64 (B·8), r f32
		// (B·H·4, saved by relu and linear2), logits f32 (B·C·4), lse
		// (B·4), loss (4).
		// Autocast: x is cast to dt for linear1 (B·D·2 saved; the f32 x
		// stays alive as the step's input), r and the logits are dt and
		// saved as such; lse and the loss stay f32.
		want32 := int64(B*D*4 + B*8 + B*H*4 + B*C*4 + B*4 + 4)
		want := int64(B*D*4 + B*D*2 + B*8 + B*H*2 + B*C*2 + B*4 + 4)
		if act32 != want32 || act != want {
			t.Errorf("%s: activation bytes after forward: f32 %d (want %d), autocast %d (want %d)", dt, act32, want32, act, want)
		}
		if d := math.Abs(loss - loss32); d > 0.02 {
			t.Errorf("%s: loss %v, f32 %v", dt, loss, loss32)
		}
		var num, den float64
		for i := range g {
			num += (g[i] - g32[i]) * (g[i] - g32[i])
			den += g32[i] * g32[i]
		}
		if rel := math.Sqrt(num / den); rel > 0.05 {
			t.Errorf("%s: gradient relative error %.3g against f32", dt, rel)
		}
	}
	if dev.LiveBlocks() != 0 {
		t.Errorf("leak: %v", dev.Live())
	}
}

func TestAutocastCastsEachParameterOnce(t *testing.T) {
	dev := cpu.New(0, device.Options{})
	w := autograd.Param(dev, dtype.F32, "w", 8, 8)
	w.Fill(0.1)
	s := autograd.NewScope()
	x := s.Full(dev, dtype.F32, 1, 4, 8)
	var out *autograd.Tensor
	s.Autocast(dtype.BF16, func() {
		h := x
		for range 3 { // one weight serving three layers (ALBERT-style)
			n := autograd.Linear(h, w, nil)
			if h != x {
				h.Release()
			}
			h = n
		}
		out = h.Sum(false)
	})
	if got := dev.Stats().ByTag[device.Parameter].Current; got != 8*8*4+8*8*2 {
		t.Errorf("parameter bytes = %d, want the f32 weight and one bf16 cast (%d)", got, 8*8*4+8*8*2)
	}
	if err := out.Backward(); err != nil {
		t.Fatal(err)
	}
	if w.Grad() == nil || w.Grad().DType() != dtype.F32 {
		t.Fatal("no f32 gradient for the shared weight")
	}
	s.Release()
	if got := dev.Stats().ByTag[device.Parameter].Current; got != 8*8*4 {
		t.Errorf("parameter bytes after Release = %d, want %d (the cast is freed)", got, 8*8*4)
	}
	w.Release()
}

func TestAutocastMetaMatchesCPU(t *testing.T) {
	run := func(dev *device.Device) device.Stats {
		autocastStep(t, dev, dtype.BF16)
		return dev.Stats()
	}
	c, m := run(cpu.New(0, device.Options{})), run(meta.New(0, device.Options{}))
	c.Device, m.Device = "", ""
	if c != m {
		t.Errorf("meta differs from cpu under autocast:\ncpu  %+v\nmeta %+v", c, m)
	}
}
