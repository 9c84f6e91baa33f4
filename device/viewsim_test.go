package device_test

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/headroom-ml/headroom/device"
	"github.com/headroom-ml/headroom/device/meta"
)

// simulate records a timeline of at least events events on a fresh meta
// device: training steps over layers with forward activations and
// workspace, backward gradients (some made by retagging workspace) and
// optimizer state, with sizes from a seeded generator. It returns the
// timeline and the device's final stats. With pre > 0 a parameter block
// of pre bytes is allocated before the recording starts.
func simulate(t testing.TB, events int, seed uint64, pre int64) (*device.Timeline, device.Stats) {
	t.Helper()
	d := meta.New(0, device.Options{})
	if pre > 0 {
		d.MustAlloc(pre, device.Label{Tag: device.Parameter, Op: "before"})
	}
	d.StartTimeline()
	rng := rand.New(rand.NewPCG(seed, 1))
	ops := 0 // allocs, releases and retags so far: events less segment events
	alloc := func(n int64, tag device.Tag, op, scope, phase string) *device.Block {
		ops += 2 // its alloc and, later, its release or retag
		b, err := d.Alloc(n, device.Label{Tag: tag, Op: op, Scope: scope, Phase: phase})
		if err != nil {
			t.Fatalf("Alloc(%d): %v", n, err)
		}
		return b
	}
	const layers = 6
	var params, grads, state []*device.Block
	for l := range layers {
		params = append(params, alloc(int64(1000+rng.IntN(1<<16)), device.Parameter, "init", fmt.Sprintf("layer%d", l), ""))
	}
	for ops < events {
		var acts []*device.Block
		for l := range layers {
			scope := fmt.Sprintf("layer%d", l)
			w := alloc(int64(1+rng.IntN(1<<14)), device.Workspace, "im2col", scope, "forward")
			acts = append(acts, alloc(int64(1+rng.IntN(1<<17)), device.Activation, "conv2d", scope, "forward"))
			w.Release()
		}
		for l := layers - 1; l >= 0; l-- {
			scope := fmt.Sprintf("layer%d", l)
			g := alloc(params[l].Len(), device.Workspace, "conv2d_backward", scope, "backward")
			if len(grads) < layers {
				g.Retag(device.Gradient)
				grads = append(grads, g)
			} else {
				g.Release()
			}
			acts[l].Release()
		}
		if state == nil {
			for l := range layers {
				state = append(state, alloc(2*params[l].Len(), device.Optimizer, "adam", fmt.Sprintf("layer%d", l), "optimizer"))
			}
		}
		alloc(int64(1+rng.IntN(4096)), device.Workspace, "adam", "", "optimizer").Release()
	}
	return d.StopTimeline(), d.Stats()
}
