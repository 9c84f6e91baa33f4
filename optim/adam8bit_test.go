package optim_test

import (
	"math"
	"math/rand"
	"testing"

	"github.com/headroom-ml/headroom/autograd"
	"github.com/headroom-ml/headroom/device"
	"github.com/headroom-ml/headroom/device/cpu"
	"github.com/headroom-ml/headroom/device/meta"
	"github.com/headroom-ml/headroom/dtype"
	"github.com/headroom-ml/headroom/nn"
	"github.com/headroom-ml/headroom/optim"
)

// regression is a linear least-squares problem y = W·x + b over fixed data,
// with its loss and exact gradients computed in float64 on the host.
type regression struct {
	in, out, rows int
	x, y          []float64 // rows×in, rows×out
}

func newRegression(seed int64, in, out, rows int) *regression {
	r := rand.New(rand.NewSource(seed))
	g := &regression{in: in, out: out, rows: rows, x: make([]float64, rows*in), y: make([]float64, rows*out)}
	w := make([]float64, out*in)
	for i := range w {
		w[i] = r.NormFloat64() / math.Sqrt(float64(in))
	}
	for i := range g.x {
		g.x[i] = r.NormFloat64()
	}
	for n := 0; n < rows; n++ {
		for o := 0; o < out; o++ {
			s := 0.1 * r.NormFloat64()
			for i := 0; i < in; i++ {
				s += w[o*in+i] * g.x[n*in+i]
			}
			g.y[n*out+o] = s + 0.5
		}
	}
	return g
}

// grads returns the mean squared error of (w, b) and its gradients.
func (g *regression) grads(w, b []float64) (loss float64, gw, gb []float64) {
	gw, gb = make([]float64, len(w)), make([]float64, len(b))
	scale := 2 / float64(g.rows*g.out)
	for n := 0; n < g.rows; n++ {
		for o := 0; o < g.out; o++ {
			e := b[o] - g.y[n*g.out+o]
			for i := 0; i < g.in; i++ {
				e += w[o*g.in+i] * g.x[n*g.in+i]
			}
			loss += e * e / float64(g.rows*g.out)
			gb[o] += scale * e
			for i := 0; i < g.in; i++ {
				gw[o*g.in+i] += scale * e * g.x[n*g.in+i]
			}
		}
	}
	return loss, gw, gb
}

// train runs steps updates of o over w and b and returns the losses.
func (g *regression) train(t *testing.T, o optim.Optimizer, w, b *autograd.Tensor, steps int) []float64 {
	t.Helper()
	var losses []float64
	for range steps {
		loss, gw, gb := g.grads(w.Float64s(), b.Float64s())
		losses = append(losses, loss)
		setGrad(t, w, gw)
		setGrad(t, b, gb)
		if err := o.Step(); err != nil {
			t.Fatal(err)
		}
		o.ZeroGrad()
	}
	return losses
}

// regressionParams makes the model's parameters: w (out×in) and b (out), F32.
func regressionParams(dev *device.Device, g *regression) (w, b *autograd.Tensor) {
	w = autograd.Param(dev, dtype.F32, "w", g.out, g.in)
	b = autograd.Param(dev, dtype.F32, "b", g.out)
	return w, b
}

// TestAdamW8bitStateBytes checks the allocator's optimizer bytes against
// the closed form 2n + 8·ceil(n/B) per quantised parameter plus 8n per F32
// one, for the default and a smaller block.
func TestAdamW8bitStateBytes(t *testing.T) {
	g := newRegression(1, 80, 75, 4) // w: 6000 elements, b: 75
	for _, block := range []int{0, 1000} {
		dev := cpu.New(0, device.Options{})
		w, b := regressionParams(dev, g)
		o, err := optim.NewAdamW8bit(params(w, b), optim.AdamConfig{LR: 1e-2}, optim.Quant8Config{Block: block})
		if err != nil {
			t.Fatal(err)
		}
		g.train(t, o, w, b, 1)
		B := block
		if B == 0 {
			B = 2048
		}
		n := int64(w.Len())
		want := 2*n + 8*((n+int64(B)-1)/int64(B)) + 8*int64(b.Len())
		if got := dev.Stats().ByTag[device.Optimizer].Current; got != want {
			t.Errorf("block %d: optimizer bytes %d, want 2·%d + 8·ceil(%d/%d) + 8·%d = %d", B, got, n, n, B, b.Len(), want)
		}
		if got := o.StateBytes(); got != want {
			t.Errorf("block %d: StateBytes %d, want %d", B, got, want)
		}
		o.Release()
		if got := dev.Stats().ByTag[device.Optimizer].Current; got != 0 {
			t.Errorf("block %d: %d optimizer bytes after Release", B, got)
		}
	}
}

// TestAdamW8bitTracksF32 trains the regression with 8-bit Adam and AdamW
// and with their F32 versions from the same start: the losses must stay
// close.
func TestAdamW8bitTracksF32(t *testing.T) {
	g := newRegression(2, 80, 64, 128) // w: 5120 elements (quantised), b: 64 (F32)
	c := optim.AdamConfig{LR: 1e-2, WeightDecay: 0.01}
	for _, kind := range []struct {
		name string
		q8   func([]nn.Param, optim.AdamConfig, optim.Quant8Config) (*optim.Adam8bit, error)
		f32  func([]nn.Param, optim.AdamConfig) (*optim.Adam, error)
	}{{"adamw", optim.NewAdamW8bit, optim.NewAdamW}, {"adam", optim.NewAdam8bit, optim.NewAdam}} {
		dev := cpu.New(0, device.Options{})
		w8, b8 := regressionParams(dev, g)
		w32, b32 := regressionParams(dev, g)
		o8, err := kind.q8(params(w8, b8), c, optim.Quant8Config{})
		if err != nil {
			t.Fatal(err)
		}
		o32, err := kind.f32(params(w32, b32), c)
		if err != nil {
			t.Fatal(err)
		}
		const steps = 150
		l8 := g.train(t, o8, w8, b8, steps)
		l32 := g.train(t, o32, w32, b32, steps)
		worst := 0.0 // the largest gap, relative to f32's loss at that step
		for i := range l8 {
			worst = math.Max(worst, math.Abs(l8[i]-l32[i])/l32[i])
		}
		t.Logf("%s: loss %.4g → %.4g (f32) and %.4g (8-bit); worst relative loss gap %.3g", kind.name, l32[0], l32[steps-1], l8[steps-1], worst)
		if l32[steps-1] > 0.5*l32[0] {
			t.Fatalf("%s: f32 did not train: loss %v → %v", kind.name, l32[0], l32[steps-1])
		}
		if worst > 0.05 {
			t.Errorf("%s: 8-bit loss is up to %.3g relative away from f32's, want ≤ 0.05", kind.name, worst)
		}
	}
}

// TestAdamW8bitMetaBytes checks that the meta device accounts the same
// optimizer bytes as cpu, so that a plan matches a run.
func TestAdamW8bitMetaBytes(t *testing.T) {
	g := newRegression(5, 80, 75, 4)
	var got [2]int64
	for i, dev := range []*device.Device{cpu.New(0, device.Options{}), meta.New(0, device.Options{})} {
		w, b := regressionParams(dev, g)
		o, err := optim.NewAdamW8bit(params(w, b), optim.AdamConfig{}, optim.Quant8Config{})
		if err != nil {
			t.Fatal(err)
		}
		setGrad(t, w, make([]float64, w.Len()))
		setGrad(t, b, make([]float64, b.Len()))
		if err := o.Step(); err != nil {
			t.Fatal(err)
		}
		got[i] = dev.Stats().ByTag[device.Optimizer].Current
	}
	if got[0] != got[1] || got[0] == 0 {
		t.Errorf("optimizer bytes: cpu %d, meta %d; want equal and non-zero", got[0], got[1])
	}
}

// TestAdamW8bitFailedStep checks that a step that fails its checks — a
// NaN learning rate, or an F32-state parameter the kernels cannot update
// (a strided view) listed after a quantised one — changes neither the
// parameters nor the state nor the optimizer's memory.
func TestAdamW8bitFailedStep(t *testing.T) {
	g := newRegression(3, 80, 64, 4)
	dev := cpu.New(0, device.Options{})
	w, _ := regressionParams(dev, g)
	buf := autograd.FromFloat64s(dev, []int{2, 2}, []float64{0.5, 1, -1, 2})
	h := buf.T().SetName("h").SetRequiresGrad(true) // columns of buf: not contiguous
	buf.Release()
	o, err := optim.NewAdamW8bit(params(w, h), optim.AdamConfig{LR: 1e-2}, optim.Quant8Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer o.Release()
	_, gw, _ := g.grads(w.Float64s(), make([]float64, g.out))
	setGrad(t, w, gw)
	if err := o.Step(); err != nil { // w gets state; h has no gradient
		t.Fatal(err)
	}
	v0, s0 := snapshot(o, w, h)
	bytes0 := dev.Stats().ByTag[device.Optimizer].Current
	o.SetLR(math.NaN())
	if err := o.Step(); err == nil {
		t.Fatal("step with a NaN learning rate succeeded")
	}
	o.SetLR(1e-2)
	unchanged(t, o, v0, s0, w, h)
	setGrad(t, h, []float64{1, 2, 3, 4})
	if err := o.Step(); err == nil {
		t.Fatal("step with a strided parameter succeeded")
	} else {
		t.Logf("rejected: %v", err)
	}
	unchanged(t, o, v0, s0, w, h)
	if got := dev.Stats().ByTag[device.Optimizer].Current; got != bytes0 {
		t.Errorf("optimizer bytes %d after the failed steps, want %d", got, bytes0)
	}
}

// TestAdamW8bitResume saves the state after 3 steps, loads it into a fresh
// optimizer over parameters reset to that point, and checks that 3 more
// steps agree bit for bit with an uninterrupted run.
func TestAdamW8bitResume(t *testing.T) {
	g := newRegression(4, 80, 64, 8)
	dev := cpu.New(0, device.Options{})
	w, b := regressionParams(dev, g)
	c, q := optim.AdamConfig{LR: 1e-2}, optim.Quant8Config{Block: 1000}
	o1, err := optim.NewAdamW8bit(params(w, b), c, q)
	if err != nil {
		t.Fatal(err)
	}
	g.train(t, o1, w, b, 3)
	saved := optim.State{Tensors: map[string]*autograd.Tensor{}, Scalars: o1.State().Scalars}
	for k, s := range o1.State().Tensors {
		cp := autograd.New(dev, s.DType(), device.Other, s.Shape()...)
		cp.CopyFrom(s)
		saved.Tensors[k] = cp
	}
	w3, b3 := w.Float64s(), b.Float64s()
	g.train(t, o1, w, b, 3)
	wantW, wantB := w.Float64s(), b.Float64s()

	w2, b2 := regressionParams(dev, g)
	w2.SetFloat64s(w3)
	b2.SetFloat64s(b3)
	o2, err := optim.NewAdamW8bit([]nn.Param{{Name: "w", T: w2}, {Name: "b", T: b2}}, c, q)
	if err != nil {
		t.Fatal(err)
	}
	if err := o2.Load(saved); err != nil {
		t.Fatal(err)
	}
	g.train(t, o2, w2, b2, 3)
	same(t, "w", w2.Float64s(), wantW)
	same(t, "b", b2.Float64s(), wantB)
	o3, err := optim.NewAdamW8bit(params(w2, b2), c, optim.Quant8Config{})
	if err != nil {
		t.Fatal(err)
	}
	if err := o3.Load(saved); err == nil {
		t.Error("a state saved with block 1000 loaded into an optimizer with block 2048")
	} else {
		t.Logf("rejected: %v", err)
	}
}
