package autograd_test

import (
	"errors"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/headroom-ml/headroom/autograd"
	"github.com/headroom-ml/headroom/autograd/autogradtest"
	"github.com/headroom-ml/headroom/device"
	"github.com/headroom-ml/headroom/device/cpu"
	"github.com/headroom-ml/headroom/device/meta"
	"github.com/headroom-ml/headroom/dtype"
)

// mlpForward runs Linear→ReLU→Linear→cross-entropy in s the way a PyTorch
// user writes it, the activation chosen by how: "habit" (h.ReLU() with
// nothing released), "release" (h released after the ReLU), "inplace"
// (h.ReLUInPlace()).
func mlpForward(s *autograd.Scope, dev *device.Device, m *mlp, how string, x []float32, y []int64, b, d int) *autograd.Tensor {
	xs := s.FromFloat32s(dev, []int{b, d}, x)
	ys := s.FromInt64s(dev, []int{b}, y)
	h := autograd.Linear(xs, m.w1, m.b1)
	var r *autograd.Tensor
	switch how {
	case "habit":
		r = h.ReLU()
	case "release":
		r = h.ReLU()
		h.Release()
	case "inplace":
		r = h.ReLUInPlace()
	}
	return autograd.CrossEntropy(autograd.Linear(r, m.w2, m.b2), ys, autograd.CEOptions{})
}

// TestUnsavedActivations measures, in closed form on cpu and meta, what
// the habit fc.Forward(x).ReLU() costs and shows it: the linear output
// (B·H·4 bytes) is held by the scope though no node saves it, so the
// device's Unsaved, Summary and OOM report list exactly those bytes (and
// the loss, the step's output); releasing it or writing the ReLU in place
// leaves only the loss, and in place the activation peak is lower by
// exactly B·H·4.
func TestUnsavedActivations(t *testing.T) {
	const B, D, H, C = 32, 20, 64, 10
	const f32, i64 = 4, 8
	// x (saved by linear1), y (saved by cross-entropy), h (saved by
	// nobody), r (saved by relu and linear2), logits and lse (saved by
	// cross-entropy), loss (the output).
	x, yb, h, logits, lse, loss := int64(B*D*f32), int64(B*i64), int64(B*H*f32), int64(B*C*f32), int64(B*f32), int64(f32)
	wantPeak := map[string]int64{
		"habit":   x + yb + 2*h + logits + lse + loss,
		"release": max(x+yb+2*h, x+yb+h+logits+lse+loss),
		"inplace": x + yb + h + logits + lse + loss,
	}
	wantUnsaved := map[string][]device.LiveGroup{
		"habit":   {{Tag: device.Activation, Creator: "linear", Bytes: h, Blocks: 1}, {Tag: device.Activation, Creator: "cross_entropy", Bytes: loss, Blocks: 1}},
		"release": {{Tag: device.Activation, Creator: "cross_entropy", Bytes: loss, Blocks: 1}},
		"inplace": {{Tag: device.Activation, Creator: "cross_entropy", Bytes: loss, Blocks: 1}},
	}
	xv, yv := batch(rand.New(rand.NewPCG(2, 2)), B, D, C)
	for _, dev := range []*device.Device{cpu.New(0, device.Options{}), meta.New(0, device.Options{})} {
		m := newMLP(dev, D, H, C, 1)
		var losses []float64
		for _, how := range []string{"habit", "release", "inplace"} {
			dev.ResetPeak()
			s := autograd.NewScope()
			l := mlpForward(s, dev, m, how, xv, yv, B, D)
			if got := dev.Unsaved(); !slices.Equal(got, wantUnsaved[how]) {
				t.Errorf("%s %s: unsaved after forward %+v, want %+v", dev.Kind(), how, got, wantUnsaved[how])
			}
			if sum := dev.Summary(); !strings.Contains(sum, "activation held only by the scope (saved by no node)") {
				t.Errorf("%s %s: the summary does not show the unsaved activations:\n%s", dev.Kind(), how, sum)
			}
			if err := l.Backward(); err != nil {
				t.Fatal(err)
			}
			// After backward nothing is saved: every live activation is
			// held by the scope alone until it is released.
			if got, act := total(dev.Unsaved()), dev.Stats().ByTag[device.Activation].Current; got != act {
				t.Errorf("%s %s: %d unsaved activation bytes after backward, want all %d", dev.Kind(), how, got, act)
			}
			losses = append(losses, l.Item())
			s.Release()
			if got := dev.Stats().ByTag[device.Activation].Peak; got != wantPeak[how] {
				t.Errorf("%s %s: activation peak %d, want %d", dev.Kind(), how, got, wantPeak[how])
			}
			t.Logf("%s %s: activation peak %d bytes (%+.1f%% against in place)", dev.Kind(), how, wantPeak[how],
				100*float64(wantPeak[how]-wantPeak["inplace"])/float64(wantPeak["inplace"]))
			for _, p := range m.params() {
				p.ZeroGrad()
			}
		}
		if losses[0] != losses[1] || losses[0] != losses[2] {
			t.Errorf("%s: losses %v differ between the three ways", dev.Kind(), losses)
		}
		m.release()
		if n := dev.LiveBlocks(); n != 0 {
			t.Errorf("%s: %d blocks live: %v", dev.Kind(), n, dev.Live())
		}
	}
}

// TestUnsavedInOOMReport: an OOM after the forward of the habit (a
// request larger than the capacity) names the unsaved linear output and
// the loss with their bytes, exactly.
func TestUnsavedInOOMReport(t *testing.T) {
	const B, D, H, C = 32, 20, 64, 10
	dev := cpu.New(0, device.Options{Capacity: 64 << 20})
	defer dev.Close()
	m := newMLP(dev, D, H, C, 1)
	defer m.release()
	xv, yv := batch(rand.New(rand.NewPCG(2, 2)), B, D, C)
	s := autograd.NewScope()
	err := s.Run(func() error {
		mlpForward(s, dev, m, "habit", xv, yv, B, D)
		s.Zeros(dev, dtype.F32, 32<<20) // 128 MiB
		return nil
	})
	var oom *device.OOMError
	if !errors.As(err, &oom) {
		t.Fatalf("error %v, want an OOM", err)
	}
	t.Logf("%v", oom)
	want := []device.LiveGroup{{Tag: device.Activation, Creator: "linear", Bytes: B * H * 4, Blocks: 1}, {Tag: device.Activation, Creator: "cross_entropy", Bytes: 4, Blocks: 1}}
	if !slices.Equal(oom.Unsaved, want) {
		t.Errorf("OOM's unsaved %+v, want %+v", oom.Unsaved, want)
	}
	if msg := oom.Error(); !strings.Contains(msg, "activation held only by the scope (saved by no node): 8.00 KiB in 2 block(s)") ||
		!strings.Contains(msg, "unsaved:   8.00 KiB in 1 block(s) from linear") {
		t.Errorf("OOM report lacks the unsaved activations:\n%s", msg)
	}
}

func total(gs []device.LiveGroup) (n int64) {
	for _, g := range gs {
		n += g.Bytes
	}
	return n
}

// TestGradInPlaceActivations checks the in-place activations' gradients
// against finite differences, through what came before them.
func TestGradInPlaceActivations(t *testing.T) {
	runGradCases(t, []gradCase{
		{name: "relu_", shapes: [][]int{{3, 4}, {4}}, f: func(_ *autograd.Scope, in []*autograd.Tensor) *autograd.Tensor {
			return in[0].Add(in[1]).ReLUInPlace() // add saves nothing: its output is free to overwrite
		}},
		{name: "sigmoid_", shapes: [][]int{{3, 4}, {3, 4}}, f: func(_ *autograd.Scope, in []*autograd.Tensor) *autograd.Tensor {
			return in[0].Mul(in[1]).SigmoidInPlace().Mul(in[1])
		}},
		{name: "tanh_", shapes: [][]int{{2, 5}, {5, 3}}, f: func(_ *autograd.Scope, in []*autograd.Tensor) *autograd.Tensor {
			return in[0].MatMul(in[1]).TanhInPlace().Sum(false, 1)
		}},
	})
}

// TestInPlaceRefusals: an in-place activation refuses, before writing, a
// parameter, a tensor an op saved for backward, and one whose storage a
// view shares; without grad it records nothing.
func TestInPlaceRefusals(t *testing.T) {
	dev := cpu.New(0, device.Options{})
	defer dev.Close()
	w := autograd.Param(dev, dtype.F32, "w", 3)
	defer w.Release()
	w.SetFloat32s([]float32{-1, 2, -3})
	s := autograd.NewScope()
	defer s.Release()
	x := s.Use(w)
	exp := x.Exp()             // saves its output
	h := x.Scale(2)            // saves nothing …
	gelu := h.GELU()           // … but GELU saves its input h
	free := x.Scale(3)         // saved by nobody …
	view := free.Reshape(1, 3) // … but viewed
	for _, c := range []struct {
		what string
		t    *autograd.Tensor
		want string
	}{
		{"a parameter", w, "leaf that requires grad"},
		{"exp's output", exp, "saved for backward"},
		{"gelu's input", h, "saved for backward"},
		{"a viewed tensor", free, "shares its storage with 1 other reference"},
	} {
		before := c.t.Float64s()
		err := autograd.Try(func() { c.t.ReLUInPlace() })
		var e *autograd.Error
		if !errors.As(err, &e) || e.Op != "relu_" || !strings.Contains(e.Msg, c.want) {
			t.Errorf("%s: error %v, want relu_ saying %q", c.what, err, c.want)
		}
		if got := c.t.Float64s(); autogradtest.MaxDiff(got, before) != 0 {
			t.Errorf("%s: values changed by the refused op: %v → %v", c.what, before, got)
		}
	}
	_, _ = gelu, view
	s.NoGrad(func() {
		y := x.Scale(1)
		if r := y.ReLUInPlace(); r != y || r.RequiresGrad() || r.Creator() != "" {
			t.Errorf("without grad: got %v, want y itself with no graph", r)
		}
		if got := y.Float64s(); autogradtest.MaxDiff(got, []float64{0, 2, 0}) != 0 {
			t.Errorf("relu_ without grad = %v, want [0 2 0]", got)
		}
	})
}
