package checkpoint_test

import (
	"errors"
	"testing"

	"github.com/headroom-ml/headroom/autograd"
	"github.com/headroom-ml/headroom/checkpoint"
	"github.com/headroom-ml/headroom/device"
	"github.com/headroom-ml/headroom/device/cpu"
	"github.com/headroom-ml/headroom/dtype"
)

// TestModesOutOfMemoryAtEachAllocation fails the step's n-th device
// allocation for every n with every mode in one stack (selective,
// recompute, offload, keep) and with SelectiveEach: the step returns the
// out-of-memory error and, once the scope is released, the device holds
// only the parameters and the host nothing — a region that runs out of
// memory midway gives back what it had kept.
func TestModesOutOfMemoryAtEachAllocation(t *testing.T) {
	dev := cpu.New(0, device.Options{})
	host := cpu.New(100, device.Options{})
	runners := map[string]func(*model, *autograd.Tensor) *autograd.Tensor{
		"modes": func(m *model, x *autograd.Tensor) *autograd.Tensor {
			o := &checkpoint.Offload{Host: host, Modes: []checkpoint.Mode{checkpoint.SelectiveRecompute, checkpoint.Recompute, checkpoint.Offloaded, checkpoint.Keep}}
			return o.Forward(m.layers, x)
		},
		"selective each": func(m *model, x *autograd.Tensor) *autograd.Tensor { return checkpoint.SelectiveEach(m.layers, nil, x) },
	}
	for name, run := range runners {
		failed := 0
		for n := 1; ; n++ {
			m := newModel(dev, dtype.F32, 4, 6, false)
			params := dev.LiveBlocks()
			s := autograd.NewScope()
			dev.InjectOOM(n)
			err := autograd.Try(func() {
				if err := run(m, s.Full(dev, dtype.F32, 0.5, 8, 6)).Pow(2).Mean(false).Backward(); err != nil {
					panic(err)
				}
			})
			dev.InjectOOM(0)
			s.Release()
			for _, b := range m.blocks {
				for _, p := range b.Params() {
					p.T.ZeroGrad() // a gradient accumulated before the failure is no leak
				}
			}
			live, hostLive, what := dev.LiveBlocks(), host.LiveBlocks(), dev.Live()
			m.release()
			if err == nil {
				break
			}
			if !errors.As(err, new(*device.OOMError)) {
				t.Fatalf("%s: allocation %d: error %v, want an *device.OOMError", name, n, err)
			}
			failed++
			if live != params || hostLive != 0 {
				t.Fatalf("%s: allocation %d failed: the device holds %d blocks (the parameters %d: %v), the host %d", name, n, live, params, what, hostLive)
			}
		}
		t.Logf("%s: failed the step at each of its %d device allocations", name, failed)
	}
}
