package checkpoint_test

import (
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/headroom-ml/headroom/autograd"
	"github.com/headroom-ml/headroom/checkpoint"
	"github.com/headroom-ml/headroom/device"
	"github.com/headroom-ml/headroom/device/cpu"
	"github.com/headroom-ml/headroom/dtype"
	"github.com/headroom-ml/headroom/nn"
)

// mixed is a per-layer choice of every mode, the offloaded layers apart.
var mixed = []checkpoint.Mode{checkpoint.Offloaded, checkpoint.Recompute, checkpoint.Offloaded, checkpoint.SelectiveRecompute, checkpoint.Keep}

// TestOffloadModesEqualPlainExactly: a stack whose layers are kept,
// recomputed, selectively recomputed and offloaded gives plain's loss,
// gradients and running statistics bit for bit, holds less at its peak, and
// leaves both devices empty.
func TestOffloadModesEqualPlainExactly(t *testing.T) {
	for _, dt := range []dtype.DType{dtype.F64, dtype.F32} {
		for _, bn := range []bool{false, true} {
			dev := cpu.New(0, device.Options{})
			host := cpu.New(100, device.Options{})
			plain := newModel(dev, dt, 5, 6, bn)
			m := newModel(dev, dt, 5, 6, bn)
			o := &checkpoint.Offload{Host: host, Modes: mixed}
			ran := make([]int, len(m.blocks))
			for i, b := range m.blocks {
				b.forwardRan = &ran[i]
			}
			l1, g1, p1 := step(t, dev, plain, 0, dt, dtype.Invalid)
			l2, g2, p2 := stepWith(t, dev, m, dt, dtype.Invalid, func(x *autograd.Tensor) *autograd.Tensor { return o.Forward(m.layers, x) })
			sameBits(t, dt.String()+" modes", l1, l2, g1, g2)
			for i, md := range mixed {
				want := 1 // kept and offloaded layers run once, recomputed ones twice
				if md == checkpoint.Recompute || md == checkpoint.SelectiveRecompute {
					want = 2
				}
				if ran[i] != want {
					t.Errorf("%s layer %d (%s): forward ran %d times, want %d", dt, i, md, ran[i], want)
				}
			}
			if st := o.Stats(); p2 >= p1 || st.Offloaded == 0 || st.Fetched != st.Offloaded {
				t.Errorf("%s bn=%v: activation peak %d B (plain %d B), offloaded %d B, fetched %d B", dt, bn, p2, p1, st.Offloaded, st.Fetched)
			}
			plain.release()
			m.release()
			if dev.LiveBlocks() != 0 || host.LiveBlocks() != 0 {
				t.Fatalf("leak: device %v, host %v", dev.Live(), host.Live())
			}
		}
	}
	for _, c := range stackCases {
		plain := runStack(t, c, dtype.F32, 0)
		o := &checkpoint.Offload{Host: cpu.New(100, device.Options{})}
		got := runStackWith(t, c, dtype.F32, func(ls []nn.Layer, x *autograd.Tensor) *autograd.Tensor {
			o.Modes = mixed[:len(ls)] // offload, recompute, offload, (selective)
			return o.Forward(ls, x)
		})
		for i := range plain {
			if math.Float64bits(plain[i]) != math.Float64bits(got[i]) {
				t.Fatalf("%s modes %v: value %d = %v, plain %v", c.name, o.Modes, i, got[i], plain[i])
			}
		}
	}
}

// TestOffloadModesCount: a Modes list of the wrong length is an
// *autograd.Error naming both counts, before any layer runs.
func TestOffloadModesCount(t *testing.T) {
	dev := cpu.New(0, device.Options{})
	m := newModel(dev, dtype.F32, 3, 6, false)
	defer m.release()
	ran := 0
	for _, b := range m.blocks {
		b.forwardRan = &ran
	}
	o := &checkpoint.Offload{Host: cpu.New(100, device.Options{}), Modes: []checkpoint.Mode{checkpoint.Keep}}
	s := autograd.NewScope()
	defer s.Release()
	err := autograd.Try(func() { o.Forward(m.layers, s.Full(dev, dtype.F32, 1, 2, 6)) })
	var ae *autograd.Error
	if !errors.As(err, &ae) || !strings.Contains(err.Error(), "1 modes for 3 layers") || ran != 0 {
		t.Fatalf("err %v after %d layer forwards; want an *autograd.Error \"1 modes for 3 layers\" before any", err, ran)
	}
}
