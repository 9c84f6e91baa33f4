package autograd_test

import (
	"bytes"
	"encoding/binary"
	"math"
	"testing"

	"github.com/headroom-ml/headroom/autograd"
	"github.com/headroom-ml/headroom/device"
	"github.com/headroom-ml/headroom/device/cpu"
	"github.com/headroom-ml/headroom/dtype"
)

// offloadStep runs loss = Σ exp(w·x) and returns w's gradient bytes and
// the host's activation bytes after the forward.
func offloadStep(t *testing.T, offload bool) ([]byte, int64, int64) {
	dev := cpu.New(0, device.Options{})
	host := cpu.New(100, device.Options{})
	w := autograd.Param(dev, dtype.F32, "w", 4)
	w.SetFloat32s([]float32{0.1, -0.2, 0.3, 0.4})
	defer w.Release()
	s := autograd.NewScope()
	defer s.Release()
	if offload {
		s.PushSavedHooks(autograd.OffloadHooks(host))
	}
	x := s.FromFloat32s(dev, []int{4}, []float32{1.5, 2.5, -3, 0.25})
	loss := s.Use(w).Mul(x).Exp().Sum(false)
	onHost := host.Stats().Tag(device.Activation).Current
	onDev := dev.Stats().Tag(device.Activation).Current
	if offload {
		s.PopSavedHooks()
	}
	if err := loss.Backward(); err != nil {
		t.Fatal(err)
	}
	g := w.Grad()
	var b []byte
	for _, v := range g.Float32s() {
		b = binary.LittleEndian.AppendUint32(b, math.Float32bits(v))
	}
	return b, onHost, onDev
}

func TestOffloadHooksExact(t *testing.T) {
	plain, h0, d0 := offloadStep(t, false)
	off, h1, d1 := offloadStep(t, true)
	if !bytes.Equal(plain, off) {
		t.Fatalf("offloaded gradient differs from plain")
	}
	// Mul saves x (w's gradient needs it; x needs none, so w is not
	// saved) and Exp its output: 2 tensors of 4 float32 = 32 bytes move
	// to the host, tagged activation.
	if h0 != 0 || h1 != 2*4*4 {
		t.Fatalf("host activation bytes %d (plain) %d (offload), want 0 and 32", h0, h1)
	}
	// The forward's own handles keep their device blocks alive here, so
	// the device holds the same activation bytes either way.
	if d0 != d1 {
		t.Fatalf("device activation bytes %d plain, %d offloaded", d0, d1)
	}
}
