package lora_test

import (
	"math"
	"slices"
	"testing"

	"github.com/headroom-ml/headroom/autograd"
	"github.com/headroom-ml/headroom/autograd/autogradtest"
	"github.com/headroom-ml/headroom/device"
	"github.com/headroom-ml/headroom/device/cpu"
	"github.com/headroom-ml/headroom/dtype"
	"github.com/headroom-ml/headroom/lora"
	"github.com/headroom-ml/headroom/nn"
	"github.com/headroom-ml/headroom/optim"
)

// TestStartsAsBase checks that B = 0 at initialisation: the adapted
// model's logits are bit for bit the base's, for a float and an int8 base
// (the int8 base against itself with every adapter removed).
func TestStartsAsBase(t *testing.T) {
	dev := cpu.New(0, device.Options{})
	x, _ := batch(1)
	g := newGPT(t, dev, dtype.F64, 1)
	want := logits(dev, g, x)
	m := apply(t, g, lora.Config{Rank: 4, Alpha: 8})
	defer nn.Release(m)
	if got := logits(dev, m, x); !slices.Equal(got, want) {
		t.Errorf("adapted logits differ from the base's by up to %g at step 0; want bit-equal (B = 0)", maxDiff(got, want))
	}
	for _, a := range m.Adapters {
		if b := a.B.Float64s(); slices.ContainsFunc(b, func(v float64) bool { return v != 0 }) {
			t.Fatalf("%s: B is not zero at initialisation", a.Name)
		}
	}
}

// TestGradients checks the gradients of two adapters' A and B (the first
// and last block's, B made non-zero) against central differences of the
// F64 loss, and that no frozen tensor receives a gradient.
func TestGradients(t *testing.T) {
	dev := cpu.New(0, device.Options{})
	m := apply(t, newGPT(t, dev, dtype.F64, 2), lora.Config{Rank: 2, Alpha: 4, Seed: 5})
	defer nn.Release(m)
	randomB(m, 6)
	x, y := batch(3)
	first, last := m.Adapters[0], m.Adapters[len(m.Adapters)-1]
	ok := autogradtest.Check(t, autogradtest.Options{Seed: 7}, func(s *autograd.Scope, _ []*autograd.Tensor) *autograd.Tensor {
		return loss(s, dev, m, x, y)
	}, first.A, first.B, last.A, last.B)
	if ok {
		t.Logf("gradients of %s and %s (A and B) match central differences", first.Name, last.Name)
	}
	s := autograd.NewScope()
	if err := loss(s, dev, m, x, y).Backward(); err != nil {
		t.Fatal(err)
	}
	s.Release()
	for _, p := range m.Params() {
		if p.Buffer && p.T.Grad() != nil {
			t.Errorf("frozen %s holds a gradient", p.Name)
		}
		if !p.Buffer && p.T.Grad() == nil {
			t.Errorf("adapter %s has no gradient", p.Name)
		}
	}
}

// TestMerge checks that the merged nn.GPT's logits equal the adapted
// model's within 1e-12 (F64), for adapters on every module and on the
// MLP only.
func TestMerge(t *testing.T) {
	dev := cpu.New(0, device.Options{})
	x, _ := batch(4)
	for _, targets := range [][]string{nil, {"mlp"}, {"q", "v"}} {
		m := apply(t, newGPT(t, dev, dtype.F64, 8), lora.Config{Rank: 3, Alpha: 6, Targets: targets})
		randomB(m, 9)
		want := logits(dev, m, x)
		g, err := m.Merge()
		if err != nil {
			t.Fatal(err)
		}
		got := logits(dev, g, x)
		if d := maxDiff(got, want); d > 1e-12 {
			t.Errorf("targets %v: merged logits differ from base+adapters by %g; want ≤ 1e-12", targets, d)
		} else {
			t.Logf("targets %v: merged vs base+adapters: max |Δ| = %.3g", targets, d)
		}
		if _, err := m.Merge(); err == nil {
			t.Errorf("targets %v: a second Merge succeeded", targets)
		}
		nn.Release(g)
	}
}

// TestTrainFrozen trains a LoRA model for 3 AdamW steps (float and int8
// base) and checks that only the adapters are in the optimizer, that every
// frozen tensor is bit for bit what it was, that the adapters moved, and
// that no gradient or state exists for the base (Gradient and Optimizer
// bytes are exactly the adapters' 1× and 2×).
func TestTrainFrozen(t *testing.T) {
	for _, base := range []lora.Base{lora.Float, lora.Int8} {
		dev := cpu.New(0, device.Options{})
		m := apply(t, newGPT(t, dev, dtype.F32, 10), lora.Config{Rank: 2, Base: base, Targets: []string{"attn", "mlp.c_fc"}})
		opt, err := optim.NewAdamW(nn.Trainable(m), optim.AdamConfig{LR: 1e-2})
		if err != nil {
			t.Fatal(err)
		}
		var adapterBytes int64
		var names []string
		for _, a := range m.Adapters {
			adapterBytes += a.A.Bytes() + a.B.Bytes()
			names = append(names, a.A.Name(), a.B.Name())
		}
		var got []string
		for _, p := range opt.Params() {
			got = append(got, p.Name)
		}
		if !slices.Equal(got, names) {
			t.Errorf("%v: optimizer trains %v; want the adapters %v", base, got, names)
		}
		before, a0 := frozenBits(m), m.Adapters[0].A.Float64s()
		x, y := batch(11)
		for range 3 {
			s := autograd.NewScope()
			if err := loss(s, dev, m, x, y).Backward(); err != nil {
				t.Fatal(err)
			}
			s.Release()
			if err := opt.Step(); err != nil {
				t.Fatal(err)
			}
			st := dev.Stats()
			if gb, ob := st.ByTag[device.Gradient].Current, st.ByTag[device.Optimizer].Current; gb != adapterBytes || ob != 2*adapterBytes {
				t.Errorf("%v: gradient %d, optimizer %d bytes; want the adapters' %d and 2·%d", base, gb, ob, adapterBytes, adapterBytes)
			}
			opt.ZeroGrad()
		}
		after := frozenBits(m)
		for name, v := range before {
			if !slices.Equal(v, after[name]) {
				t.Errorf("%v: frozen %s changed in training", base, name)
			}
		}
		if slices.Equal(a0, m.Adapters[0].A.Float64s()) {
			t.Errorf("%v: %s did not move in 3 steps", base, m.Adapters[0].A.Name())
		}
		opt.Release()
		nn.Release(m)
	}
}

// TestDropout: with lora dropout the adapted model differs from the
// same adapters without dropout in training mode and equals it bit for bit
// after Train(false).
func TestDropout(t *testing.T) {
	dev := cpu.New(0, device.Options{})
	x, _ := batch(14)
	plain := apply(t, newGPT(t, dev, dtype.F64, 15), lora.Config{Rank: 2})
	defer nn.Release(plain)
	randomB(plain, 16)
	m, err := lora.Apply(newGPT(t, dev, dtype.F64, 15), lora.Config{Rank: 2, Dropout: 0.5}, autograd.NewGenerator(3))
	if err != nil {
		t.Fatal(err)
	}
	defer nn.Release(m)
	randomB(m, 16)
	want := logits(dev, plain, x)
	if got := logits(dev, m, x); slices.Equal(got, want) {
		t.Errorf("dropout 0.5 in training mode changed nothing")
	}
	m.Train(false)
	if got := logits(dev, m, x); !slices.Equal(got, want) {
		t.Errorf("dropout in eval mode: logits differ from no dropout by %g; want bit-equal", maxDiff(got, want))
	}
	g := newGPT(t, dev, dtype.F64, 15)
	if _, err := lora.Apply(g, lora.Config{Rank: 2, Dropout: 0.5}, nil); err == nil {
		t.Errorf("dropout with a nil generator was accepted")
	}
	nn.Release(g)
}

// TestMergeInt8 merges adapters over an INT8 base into an F32 nn.GPT:
// its logits equal the adapted model's to F32 rounding (1e-5 of the
// largest), it holds no INT8 tensor, and its parameter bytes are the
// float model's (4·P): the INT8 tensors were released.
func TestMergeInt8(t *testing.T) {
	dev := cpu.New(0, device.Options{})
	x, _ := batch(20)
	m := apply(t, newGPT(t, dev, dtype.F32, 21), lora.Config{Rank: 2, Alpha: 4, Base: lora.Int8, Targets: []string{"attn"}})
	randomB(m, 22)
	want := logits(dev, m, x)
	g, err := m.Merge()
	if err != nil {
		t.Fatal(err)
	}
	defer nn.Release(g)
	got := logits(dev, g, x)
	var top float64
	for _, v := range want {
		top = max(top, math.Abs(v))
	}
	if d := maxDiff(got, want); d > 1e-5*top {
		t.Errorf("merged int8 model's logits differ by %g (largest %g); want ≤ 1e-5 of it", d, top)
	} else {
		t.Logf("merged int8 base + adapters vs adapted: max |Δ| = %.3g of %.3g", d, top)
	}
	for _, p := range g.Params() {
		if p.T.DType() != dtype.F32 || p.T.Released() || !p.T.RequiresGrad() {
			t.Errorf("merged %s: %s, released %v, requires grad %v; want a live trainable F32 parameter", p.Name, p.T.DType(), p.T.Released(), p.T.RequiresGrad())
		}
	}
	if got, want := dev.Stats().ByTag[device.Parameter].Current, 4*nn.Count(g); got != want {
		t.Errorf("after the merge the device holds %d parameter bytes; want the F32 model's %d", got, want)
	}
}
