package quant_test

import (
	"testing"

	"github.com/headroom-ml/headroom/autograd"
	"github.com/headroom-ml/headroom/device"
	"github.com/headroom-ml/headroom/device/cpu"
	"github.com/headroom-ml/headroom/device/meta"
	"github.com/headroom-ml/headroom/dtype"
	"github.com/headroom-ml/headroom/nn"
	"github.com/headroom-ml/headroom/quant"
)

// paramDelta returns how many parameter bytes f allocates on dev (exact
// requested bytes, from the allocator).
func paramDelta(dev *device.Device, f func()) int64 {
	before := dev.Stats().Tag(device.Parameter).Current
	f()
	return dev.Stats().Tag(device.Parameter).Current - before
}

// TestInt8WeightBytes measures with the allocator what the int8 layers
// hold: the weight takes exactly 25% of its F32 bytes, plus 4 bytes of
// scale per output channel (and 4 per output for a bias, 4 for a static
// input scale).
func TestInt8WeightBytes(t *testing.T) {
	dev := cpu.New(0, device.Options{})
	b := nn.NewBuilder(dev, dtype.F32, 1)
	for _, c := range []struct {
		in, out      int
		bias, static bool
	}{{300, 70, false, false}, {64, 10, true, false}, {513, 3, true, true}} {
		var l *nn.Linear
		f32 := paramDelta(dev, func() { l = nn.NewLinear(b, "fc", c.in, c.out, c.bias) })
		wf32 := int64(4 * c.in * c.out)
		scale := float32(0)
		if c.static {
			scale = 0.1
		}
		var q *quant.Linear
		got := paramDelta(dev, func() {
			var err error
			if q, err = quant.FromLinear(l, scale); err != nil {
				t.Fatal(err)
			}
		})
		want := wf32/4 + 4*int64(c.out)
		if c.bias {
			want += 4 * int64(c.out)
		}
		if c.static {
			want += 4
		}
		if got != want || q.Weight.Bytes()*4 != wf32 {
			t.Errorf("Linear(%d, %d) bias %v static %v: int8 layer %d bytes (weight %d), want %d (weight %d = 25%% of %d)",
				c.in, c.out, c.bias, c.static, got, q.Weight.Bytes(), want, wf32/4, wf32)
		}
		t.Logf("Linear(%d, %d): F32 %d bytes, int8 %d bytes = %.2f%% (weight exactly 25%%, scales %d bytes)", c.in, c.out, f32, got, 100*float64(got)/float64(f32), 4*c.out)
		nn.Release(l)
		nn.Release(q)
	}
	conv := nn.NewConv2d(b, "conv", 16, 32, [2]int{3, 3}, autograd.ConvOptions{}, false)
	var q *quant.Conv2d
	got := paramDelta(dev, func() {
		var err error
		if q, err = quant.FromConv2d(conv, nil, false, 0); err != nil {
			t.Fatal(err)
		}
	})
	if want := int64(16*32*9 + 4*32); got != want {
		t.Errorf("Conv2d(16, 32, 3×3): int8 layer %d bytes, want %d", got, want)
	}
	nn.Release(conv)
	nn.Release(q)
	if n := dev.Stats().Requested.Current; n != 0 {
		t.Errorf("%d bytes left: %v", n, dev.Leaks())
	}
}

// TestForwardMemoryMetaMatchesCPU runs a converted SmallResNet forward on
// cpu and on meta: the peak and the bytes by tag agree exactly, and after
// the forward only the parameters and the logits are live (the
// workspaces, tagged Workspace, are gone). The forward's workspace peak is
// also checked against its closed form for one layer.
func TestForwardMemoryMetaMatchesCPU(t *testing.T) {
	type result struct{ peak, ws, live int64 }
	var got []result
	for _, dev := range []*device.Device{cpu.New(0, device.Options{}), meta.New(0, device.Options{})} {
		r, err := nn.SmallResNet(nn.NewBuilder(dev, dtype.F32, 1), "resnet", nn.ResNetConfig{InChannels: 1})
		if err != nil {
			t.Fatal(err)
		}
		r.Train(false)
		q, err := quant.ConvertResNet(r, quant.Config{Activations: quant.Static}, images(dev, 1, 1, 4, 1, 28, 28))
		if err != nil {
			t.Fatal(err)
		}
		nn.Release(r)
		s := autograd.NewScope()
		x := s.Zeros(dev, dtype.F32, 16, 1, 28, 28)
		dev.ResetPeak()
		var y *autograd.Tensor
		s.NoGrad(func() { y = q.Forward(x) })
		st := dev.Stats()
		live := st.Requested.Current - nn.ParamBytes(q) - x.Bytes() - y.Bytes()
		got = append(got, result{st.Requested.Peak, st.Tag(device.Workspace).Peak, live})
		s.Release()
		nn.Release(q)
		if n := dev.Stats().Requested.Current; n != 0 {
			t.Errorf("%s: %d bytes left: %v", dev.Kind(), n, dev.Leaks())
		}
	}
	if got[0] != got[1] {
		t.Errorf("cpu %+v, meta %+v: want the same", got[0], got[1])
	}
	if got[0].live != 0 {
		t.Errorf("%d bytes live after forward besides parameters, input and logits", got[0].live)
	}
	// The largest workspace is layer3's 3×3 convolutions' on (16, 64, 7, 7):
	// the quantized input (16·64·49 bytes) and, for device.I8Slots = 2
	// workers with units of ⌈512/49⌉ = 11 samples, the im2col matrices
	// (2·576·11·49 bytes) and the accumulators (2·4·64·11·49).
	if want := int64(16*64*49 + device.I8Slots*576*11*49 + device.I8Slots*4*64*11*49); got[0].ws != want {
		t.Errorf("workspace peak %d bytes, want %d", got[0].ws, want)
	}
	t.Logf("forward of (16, 1, 28, 28): peak %d bytes, workspace peak %d, cpu and meta identical", got[0].peak, got[0].ws)
}
