package checkpoint_test

import (
	"math"
	"testing"

	"github.com/headroom-ml/headroom/autograd"
	"github.com/headroom-ml/headroom/checkpoint"
	"github.com/headroom-ml/headroom/device"
	"github.com/headroom-ml/headroom/device/cpu"
	"github.com/headroom-ml/headroom/dtype"
	"github.com/headroom-ml/headroom/nn"
)

// TestOffloadGradientsEqualPlainExactly: moving the saved tensors to the
// host and back changes no bit of the loss, the gradients or the running
// statistics, for every prefetch window; afterwards both devices hold
// nothing, and every byte that went to the host came back.
func TestOffloadGradientsEqualPlainExactly(t *testing.T) {
	for _, dt := range []dtype.DType{dtype.F64, dtype.F32} {
		for _, bn := range []bool{false, true} {
			for _, window := range []int{-1, 1, 2, 8} {
				dev := cpu.New(0, device.Options{})
				host := cpu.New(100, device.Options{})
				plain := newModel(dev, dt, 5, 6, bn)
				off := newModel(dev, dt, 5, 6, bn)
				o := &checkpoint.Offload{Host: host, Window: window}
				l1, g1, _ := step(t, dev, plain, 0, dt, dtype.Invalid)
				l2, g2, _ := stepWith(t, dev, off, dt, dtype.Invalid, func(x *autograd.Tensor) *autograd.Tensor { return o.Forward(off.layers, x) })
				sameBits(t, dt.String()+" offload", l1, l2, g1, g2)
				st := o.Stats()
				if st.Offloaded == 0 || st.Fetched != st.Offloaded {
					t.Errorf("%s window %d: offloaded %d B, fetched %d B: want the same, not 0", dt, window, st.Offloaded, st.Fetched)
				}
				if hp := host.Stats().ByTag[device.Activation].Peak; hp != st.Offloaded {
					t.Errorf("%s window %d: host activation peak %d B, offloaded %d B", dt, window, hp, st.Offloaded)
				}
				plain.release()
				off.release()
				if dev.LiveBlocks() != 0 || host.LiveBlocks() != 0 {
					t.Fatalf("leak: device %v, host %v", dev.Live(), host.Live())
				}
			}
		}
	}
}

// TestOffloadNNBlocksMatchExactly: ResNet and GPT blocks (batch-norm,
// attention, dropout) give bit-identical results when offloaded.
func TestOffloadNNBlocksMatchExactly(t *testing.T) {
	for _, c := range stackCases {
		for _, dt := range []dtype.DType{dtype.F64, dtype.F32} {
			plain := runStack(t, c, dt, 0)
			host := cpu.New(100, device.Options{})
			o := &checkpoint.Offload{Host: host}
			got := runStackWith(t, c, dt, o.Forward)
			for i := range plain {
				if math.Float64bits(plain[i]) != math.Float64bits(got[i]) {
					t.Fatalf("%s %s offload: value %d = %v, plain %v", c.name, dt, i, got[i], plain[i])
				}
			}
			if host.LiveBlocks() != 0 || o.Stats().Offloaded == 0 {
				t.Fatalf("%s %s: host holds %v after the step; offloaded %d B", c.name, dt, host.Live(), o.Stats().Offloaded)
			}
		}
	}
}

// TestOffloadPeakFallsByOffloadedBytes checks the device's activation peak
// in closed form: plain's peak less the bytes moved to the host, plus the
// prefetch window's layers (window × one middle layer's bytes: the blocks
// are alike), for each window; the host holds exactly the moved bytes.
func TestOffloadPeakFallsByOffloadedBytes(t *testing.T) {
	const n = 6
	for _, dt := range []dtype.DType{dtype.F32, dtype.F64} {
		dev := cpu.New(0, device.Options{})
		plain := newModel(dev, dt, n, 8, false)
		_, _, p0 := step(t, dev, plain, 0, dt, dtype.Invalid)
		plain.release()
		for _, window := range []int{1, 2, 3} {
			host := cpu.New(100, device.Options{})
			m := newModel(dev, dt, n, 8, false)
			o := &checkpoint.Offload{Host: host, Window: window}
			_, _, p1 := stepWith(t, dev, m, dt, dtype.Invalid, func(x *autograd.Tensor) *autograd.Tensor { return o.Forward(m.layers, x) })
			st := o.Stats()
			// Layer 0 keeps the stack's input (its caller holds it); layers
			// 1 … n-2 each move one layer's saved bytes, layer n-1 none.
			perLayer := layerSaved(t, dt)
			if want := int64(n-2)*perLayer + perLayer - batchWidth(dt); st.Offloaded != want {
				t.Fatalf("%s: offloaded %d B, want %d B ((n-1) layers' saved activations less the kept input)", dt, st.Offloaded, want)
			}
			want := p0 - st.Offloaded + int64(window)*perLayer
			t.Logf("%s window %d: plain peak %d B, offloaded %d B, peak %d B", dt, window, p0, st.Offloaded, p1)
			if p1 != want {
				t.Errorf("%s window %d: activation peak %d B, want plain %d − offloaded %d + window %d×%d = %d B", dt, window, p1, p0, st.Offloaded, window, perLayer, want)
			}
			if host.Stats().ByTag[device.Activation].Peak != st.Offloaded || host.LiveBlocks() != 0 {
				t.Errorf("%s: host peak %d B (want %d), live %v", dt, host.Stats().ByTag[device.Activation].Peak, st.Offloaded, host.Live())
			}
			m.release()
		}
		if dev.LiveBlocks() != 0 {
			t.Fatalf("leak: %v", dev.Live())
		}
	}
}

// batchWidth is the bytes of one (8, 8) activation, the stack's input.
func batchWidth(dt dtype.DType) int64 { return 8 * 8 * int64(dt.Size()) }

// layerSaved is what one block of the test model saves for backward
// besides parameters (its input x, W1·x for GELU, the dropout mask,
// dropout's output for W2's gradient), as savedBytes counts it.
func layerSaved(t *testing.T, dt dtype.DType) int64 {
	t.Helper()
	dev := cpu.New(0, device.Options{})
	m := newModel(dev, dt, 1, 8, false)
	defer m.release()
	return savedBytes(m.layers[0], dev, dt, 8, 8)
}

// savedBytes is the allocator's bytes of each distinct activation block
// that l's ops save for backward on an input of the given shape, counted
// by hooks that only look.
func savedBytes(l nn.Layer, dev *device.Device, dt dtype.DType, shape ...int) int64 {
	s := autograd.NewScope()
	defer s.Release()
	seen := map[*device.Block]bool{}
	var n int64
	s.PushSavedHooks(autograd.SavedHooks{
		Pack: func(t *autograd.Tensor) any {
			if b := t.Block(); b.Label().Tag == device.Activation && !seen[b] {
				seen[b] = true
				n += b.Len()
			}
			return t
		},
		Unpack: func(p any) *autograd.Tensor { return p.(*autograd.Tensor).Detach() },
		Free:   func(p any) { p.(*autograd.Tensor).Release() },
	})
	defer s.PopSavedHooks()
	l.Forward(s.Full(dev, dt, 0.5, shape...))
	return n
}

// TestOffloadGPTPeakFallsByOffloadedBytes is the closed form of
// TestOffloadPeakFallsByOffloadedBytes for 6 GPT blocks (attention,
// dropout): offloaded = 5·S − |x|, peak = plain − offloaded + window·S.
func TestOffloadGPTPeakFallsByOffloadedBytes(t *testing.T) {
	dev := cpu.New(0, device.Options{})
	cfg := nn.GPTConfig{Vocab: 16, Context: 16, Layers: 6, Heads: 2, Width: 32, Dropout: 0.1, Bias: true}
	b := nn.NewBuilder(dev, dtype.F32, 1)
	gen := autograd.NewGenerator(5)
	var ls []nn.Layer
	for i := range cfg.Layers {
		ls = append(ls, nn.NewGPTBlock(b, "h"+string(rune('0'+i)), cfg, gen))
	}
	m := nn.NewSequential(ls...)
	defer nn.Release(m)
	shape := []int{2, 16, 32}
	xBytes := int64(2 * 16 * 32 * 4)
	peak := func(run func(*autograd.Tensor) *autograd.Tensor) int64 {
		s := autograd.NewScope()
		defer s.Release()
		dev.ResetPeak()
		if err := run(s.Full(dev, dtype.F32, 0.5, shape...)).Pow(2).Mean(false).Backward(); err != nil {
			t.Fatal(err)
		}
		nn.ZeroGrad(m)
		return dev.Stats().Tag(device.Activation).Peak
	}
	perLayer := savedBytes(ls[0], dev, dtype.F32, shape...)
	plain := peak(m.Forward)
	for _, window := range []int{1, 2, 3} {
		host := cpu.New(100, device.Options{})
		o := &checkpoint.Offload{Host: host, Window: window}
		got := peak(func(x *autograd.Tensor) *autograd.Tensor { return o.Forward(ls, x) })
		st := o.Stats()
		if want := 5*perLayer - xBytes; st.Offloaded != want {
			t.Fatalf("offloaded %d B, want 5×%d − %d = %d B", st.Offloaded, perLayer, xBytes, want)
		}
		want := plain - st.Offloaded + int64(window)*perLayer
		t.Logf("window %d: plain peak %d B, offloaded %d B, peak %d B", window, plain, st.Offloaded, got)
		if got != want {
			t.Errorf("window %d: activation peak %d B, want plain %d − offloaded %d + window %d×%d = %d B", window, got, plain, st.Offloaded, window, perLayer, want)
		}
		if host.LiveBlocks() != 0 {
			t.Fatalf("host holds %v after the step", host.Live())
		}
	}
}
