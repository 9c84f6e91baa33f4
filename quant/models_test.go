package quant_test

import (
	"iter"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/headroom-ml/headroom/autograd"
	"github.com/headroom-ml/headroom/device"
	"github.com/headroom-ml/headroom/device/cpu"
	"github.com/headroom-ml/headroom/device/meta"
	"github.com/headroom-ml/headroom/dtype"
	"github.com/headroom-ml/headroom/nn"
	"github.com/headroom-ml/headroom/quant"
)

// trainedResNet returns a SmallResNet on dev whose batch-norms have
// non-trivial running statistics (a few forward passes in training mode on
// random images), switched to eval mode.
func trainedResNet(t *testing.T, dev *device.Device, cfg nn.ResNetConfig, seed uint64) *nn.ResNet {
	t.Helper()
	r, err := nn.SmallResNet(nn.NewBuilder(dev, dtype.F32, seed), "resnet", cfg)
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(seed, 9))
	for range 3 {
		s := autograd.NewScope()
		s.NoGrad(func() {
			x := s.FromFloat32s(dev, []int{8, r.Config.InChannels, 12, 12}, randF32(rng, 8*r.Config.InChannels*144, 1))
			r.Forward(x)
		})
		s.Release()
	}
	r.Train(false)
	return r
}

// images yields n batches of random images (N, C, H, W) made in scopes
// that it releases after each.
func images(dev *device.Device, seed uint64, n, N, C, H, W int) iter.Seq[*autograd.Tensor] {
	return func(yield func(*autograd.Tensor) bool) {
		rng := rand.New(rand.NewPCG(seed, 3))
		for range n {
			s := autograd.NewScope()
			x := s.FromFloat32s(dev, []int{N, C, H, W}, randF32(rng, N*C*H*W, 1))
			ok := yield(x)
			s.Release()
			if !ok {
				return
			}
		}
	}
}

// forward runs m on x in a NoGrad scope and returns the output's values.
func forward(dev *device.Device, m nn.Layer, shape []int, x []float32) []float32 {
	s := autograd.NewScope()
	defer s.Release()
	var out []float32
	s.NoGrad(func() { out = m.Forward(s.FromFloat32s(dev, shape, x)).Float32s() })
	return out
}

// relErr returns max |a−b| / max |b|.
func relErr(a, b []float32) float64 {
	var e, m float64
	for i := range a {
		e = max(e, math.Abs(float64(a[i])-float64(b[i])))
		m = max(m, math.Abs(float64(b[i])))
	}
	return e / m
}

// TestConvertSmallResNet converts a SmallResNet with dynamic and with
// static (calibrated) activations and compares the logits with the F32
// model's on random images; the prepared model computes the F32 model
// exactly.
func TestConvertSmallResNet(t *testing.T) {
	dev := cpu.New(0, device.Options{})
	r := trainedResNet(t, dev, nn.ResNetConfig{InChannels: 1}, 1)
	defer nn.Release(r)
	rng := rand.New(rand.NewPCG(2, 2))
	shape := []int{6, 1, 12, 12}
	x := randF32(rng, 6*144, 1)
	want := forward(dev, r, shape, x)

	p, err := quant.PrepareResNet(r, quant.Config{Activations: quant.Static})
	if err != nil {
		t.Fatal(err)
	}
	if e := relErr(forward(dev, p, shape, x), want); e != 0 {
		t.Fatalf("prepared model differs from the float model: relative error %g", e)
	}
	for _, act := range []quant.Activations{quant.Dynamic, quant.Static} {
		q, err := quant.ConvertResNet(r, quant.Config{Activations: act}, images(dev, 5, 4, 8, 1, 12, 12))
		if err != nil {
			t.Fatal(err)
		}
		got := forward(dev, q, shape, x)
		e := relErr(got, want)
		t.Logf("%v activations: logits' max error %.4f of their largest magnitude", act, e)
		if e > 0.1 || e == 0 {
			t.Errorf("%v: relative error %g, want 0 < e ≤ 0.1", act, e)
		}
		nn.Release(q)
	}
}

// TestQATForwardIsInt8Forward checks that a QAT-prepared ResNet in eval
// mode computes, in floating point, what the converted int8 model computes
// (up to the order of float32 roundings), for dynamic and static
// activations: the fake quantization simulates exactly the integer path.
func TestQATForwardIsInt8Forward(t *testing.T) {
	dev := cpu.New(0, device.Options{})
	r := trainedResNet(t, dev, nn.ResNetConfig{InChannels: 2}, 3)
	defer nn.Release(r)
	rng := rand.New(rand.NewPCG(2, 2))
	shape := []int{5, 2, 12, 12}
	x := randF32(rng, 5*2*144, 1)
	for _, act := range []quant.Activations{quant.Dynamic, quant.Static} {
		p, err := quant.PrepareQATResNet(r, quant.Config{Activations: act})
		if err != nil {
			t.Fatal(err)
		}
		if err := p.Calibrate(images(dev, 5, 3, 8, 2, 12, 12)); err != nil {
			t.Fatal(err)
		}
		p.Train(false)
		fq := forward(dev, p, shape, x)
		q, err := p.Convert()
		if err != nil {
			t.Fatal(err)
		}
		got := forward(dev, q, shape, x)
		e := relErr(got, fq)
		t.Logf("%v: int8 against fake-quantized float: relative error %.2g", act, e)
		if e > 1e-5 {
			t.Errorf("%v: the int8 model differs from the QAT model by %g of the largest logit", act, e)
		}
		nn.Release(q)
	}
}

// quantBytes returns the exact parameter bytes of r's int8 form: one byte
// per convolution and fc weight, and 4+4 bytes (scale, bias) per output
// channel, plus 4 per layer for static input scales.
func quantBytes(r *nn.ResNet, static bool) (int64, int64) {
	var n, f32 int64
	add := func(w *autograd.Tensor) {
		n += int64(w.Len()) + 8*int64(w.Dim(0))
		f32 += 4 * int64(w.Len())
		if static {
			n += 4
		}
	}
	for _, p := range r.Params() {
		if p.T.Rank() == 4 || p.Name == "resnet.fc.weight" {
			add(p.T)
		}
	}
	return n, f32
}

// TestConvertResNetOnMeta converts every ResNet variant (basic and
// bottleneck blocks, both stems) on the meta device: the converted model's
// parameter bytes, measured by the allocator, match the closed form
// exactly, the logits have the right shape, and converting and running
// leave nothing behind. SmallResNet's int8 parameters are 25.7% of the F32
// ones.
func TestConvertResNetOnMeta(t *testing.T) {
	dev := meta.New(0, device.Options{})
	cfgs := []struct {
		name string
		cfg  nn.ResNetConfig
		hw   int
	}{
		{"small", nn.ResNetConfig{InChannels: 1}, 28},
		{"basic-imagenet", nn.ResNetConfig{Block: "basic", Blocks: []int{2, 1}, Widths: []int{8, 16}, Classes: 7}, 32},
		{"bottleneck", nn.ResNetConfig{Block: "bottleneck", Blocks: []int{1, 2}, Widths: []int{4, 8}, Stem: "small", Classes: 5}, 16},
	}
	for _, c := range cfgs {
		var r *nn.ResNet
		var err error
		b := nn.NewBuilder(dev, dtype.F32, 1)
		if c.name == "small" {
			r, err = nn.SmallResNet(b, "resnet", c.cfg)
		} else {
			r, err = nn.NewResNet(b, "resnet", c.cfg)
		}
		if err != nil {
			t.Fatal(err)
		}
		for _, act := range []quant.Activations{quant.Dynamic, quant.Static} {
			before := dev.Stats().Tag(device.Parameter).Current
			in := r.Config.InChannels
			q, err := quant.ConvertResNet(r, quant.Config{Activations: act}, images(dev, 1, 2, 4, in, c.hw, c.hw))
			if err != nil {
				t.Fatal(err)
			}
			got := dev.Stats().Tag(device.Parameter).Current - before
			want, f32 := quantBytes(r, act == quant.Static)
			if got != want || nn.ParamBytes(q) != want {
				t.Errorf("%s %v: int8 parameters %d bytes (ParamBytes %d), want %d", c.name, act, got, nn.ParamBytes(q), want)
			}
			s := autograd.NewScope()
			var shape []int
			s.NoGrad(func() {
				shape = q.Forward(s.Zeros(dev, dtype.F32, 3, in, c.hw, c.hw)).Shape()
			})
			s.Release()
			if len(shape) != 2 || shape[0] != 3 || shape[1] != r.Config.Classes {
				t.Errorf("%s: logits %v, want [3 %d]", c.name, shape, r.Config.Classes)
			}
			nn.Release(q)
			if now := dev.Stats().Tag(device.Parameter).Current; now != before {
				t.Errorf("%s: %d parameter bytes left after releasing the int8 model", c.name, now-before)
			}
			if act == quant.Dynamic {
				t.Logf("%s: int8 %d bytes = %.1f%% of the F32 weights' %d", c.name, got, 100*float64(got)/float64(f32), f32)
			}
		}
		nn.Release(r)
		if live := dev.Stats().Requested.Current; live != 0 {
			t.Errorf("%s: %d bytes still live: %v", c.name, live, dev.Leaks())
		}
	}
}

// TestConvertOutOfMemory converts a SmallResNet on a device with room for
// only part of the int8 model: Convert returns the out-of-memory error and
// leaves the device as it found it.
func TestConvertOutOfMemory(t *testing.T) {
	dev := meta.New(0, device.Options{})
	r, err := nn.SmallResNet(nn.NewBuilder(dev, dtype.F32, 1), "resnet", nn.ResNetConfig{InChannels: 1})
	if err != nil {
		t.Fatal(err)
	}
	// Fill the segment the model lives in up to 40 KiB, and allow no more.
	var fill []*autograd.Tensor
	for {
		st := dev.Stats()
		free := st.Reserved.Current - st.Allocated.Current - 40<<10
		if free <= 0 {
			break
		}
		fill = append(fill, autograd.New(dev, dtype.I8, device.Other, int(min(free, 1<<20))))
	}
	dev.SetCapacity(dev.Stats().Reserved.Current)
	before := dev.Stats().Requested.Current
	q, err := quant.ConvertResNet(r, quant.Config{}, nil)
	if err == nil || !autograd.IsOOM(err) {
		t.Fatalf("ConvertResNet with %d bytes free: %v, %v; want an out-of-memory error", 40<<10, q, err)
	}
	t.Logf("%v", err)
	if now := dev.Stats().Requested.Current; now != before {
		t.Errorf("after the failed conversion %d bytes are live, %d before", now, before)
	}
	release(nil, fill...)
	nn.Release(r)
}

// TestConvertErrors checks the errors of the conversion entry points: an
// unknown model kind, a configuration out of range, static activations
// without calibration (naming the layers), converting twice; and that
// Convert dispatches prepared models.
func TestConvertErrors(t *testing.T) {
	dev := meta.New(0, device.Options{})
	r, err := nn.SmallResNet(nn.NewBuilder(dev, dtype.F32, 1), "resnet", nn.ResNetConfig{InChannels: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer nn.Release(r)
	before := dev.Stats().Requested.Current
	check := func(what string, err error, want string) {
		t.Helper()
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want an error mentioning %q", what, err, want)
			return
		}
		t.Logf("%s: %v", what, err)
	}
	q, err := quant.Convert(nn.NewSequential(), quant.Config{}, nil)
	check("unknown model", err, "want *nn.ResNet, *nn.GPT")
	if q != nil {
		t.Errorf("Convert returned %v with its error", q)
	}
	_, err = quant.Convert(r, quant.Config{Activations: 7}, nil)
	check("bad activations", err, "activations Activations(7)")
	_, err = quant.Convert(r, quant.Config{Averaging: 2}, nil)
	check("bad averaging", err, "averaging constant 2")
	_, err = quant.Convert(r, quant.Config{Activations: quant.Static}, nil)
	check("static without calibration", err, "static activations need calibration: the inputs of [resnet.conv1 resnet.layer1.0.conv1 resnet.layer1.0.conv2 and 7 more]")
	if now := dev.Stats().Requested.Current; now != before {
		t.Errorf("failed conversions left %d bytes", now-before)
	}
	p, err := quant.PrepareQATResNet(r, quant.Config{})
	if err != nil {
		t.Fatal(err)
	}
	m, err := quant.Convert(p, quant.Config{}, nil)
	if err != nil || !m.Converted() || p.Converted() {
		t.Fatalf("Convert of a QAT model: %v, %v", m, err)
	}
	_, err = m.(*quant.ResNet).Convert()
	check("convert twice", err, "already converted")
	check("calibrate converted", m.Calibrate(images(dev, 1, 1, 1, 1, 8, 8)), "already converted")
	nn.Release(m)
}

// TestLowPrecisionModels converts BF16, F16 and F64 ResNets (calibrated
// with F32 images, which the prepared model casts to the parameters'
// dtype) and runs a QAT step on each: the int8 model runs, and gradients
// reach the 16-bit parameters through the F32 fake quantization.
func TestLowPrecisionModels(t *testing.T) {
	dev := cpu.New(0, device.Options{})
	for _, dt := range []dtype.DType{dtype.BF16, dtype.F16, dtype.F64} {
		r, err := nn.NewResNet(nn.NewBuilder(dev, dt, 1), "resnet", nn.ResNetConfig{Blocks: []int{1, 1}, Widths: []int{4, 8}, Stem: "small", InChannels: 1, Classes: 3})
		if err != nil {
			t.Fatal(err)
		}
		r.Train(false)
		q, err := quant.ConvertResNet(r, quant.Config{Activations: quant.Static}, images(dev, 1, 1, 4, 1, 8, 8))
		if err != nil {
			t.Fatalf("%s: %v", dt, err)
		}
		if out := forward(dev, q, []int{2, 1, 8, 8}, randF32(rand.New(rand.NewPCG(1, 1)), 128, 1)); len(out) != 6 {
			t.Errorf("%s: %d logits", dt, len(out))
		}
		nn.Release(q)
		p, err := quant.PrepareQATResNet(r, quant.Config{})
		if err != nil {
			t.Fatal(err)
		}
		s := autograd.NewScope()
		x := s.FromFloat32s(dev, []int{2, 1, 8, 8}, randF32(rand.New(rand.NewPCG(1, 1)), 128, 1))
		if dt == dtype.F64 {
			x = x.Cast(dtype.F64)
		}
		err = autograd.Try(func() {
			if err := p.Forward(x).Sum(false).Backward(); err != nil {
				panic(err)
			}
		})
		s.Release()
		if err != nil || r.Conv1.Weight.Grad() == nil || r.BN1.Weight.Grad() == nil {
			t.Errorf("%s: QAT backward: %v (conv1 grad %v, bn1 grad %v)", dt, err, r.Conv1.Weight.Grad(), r.BN1.Weight.Grad())
		}
		nn.Release(r)
	}
}
