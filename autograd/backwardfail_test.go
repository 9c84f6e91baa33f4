package autograd_test

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/headroom-ml/headroom/autograd"
	"github.com/headroom-ml/headroom/checkpoint"
	"github.com/headroom-ml/headroom/device"
	"github.com/headroom-ml/headroom/device/cpu"
	"github.com/headroom-ml/headroom/dtype"
)

// failNet is a small MLP whose forward can route through the engine's
// special paths: saved-tensor hooks that hand backward a fresh copy (as
// offloading does), and a checkpointed layer (a custom node whose
// gradients come from a nested pass, free-standing).
type failNet struct {
	dev            *device.Device
	w1, b1, w2, b2 *autograd.Tensor
	x              []float64
	y              []int64
}

func newFailNet() *failNet {
	dev := cpu.New(0, device.Options{})
	n := &failNet{dev: dev,
		w1: autograd.Param(dev, dtype.F32, "w1", 16, 6), b1: autograd.Param(dev, dtype.F32, "b1", 16),
		w2: autograd.Param(dev, dtype.F32, "w2", 3, 16), b2: autograd.Param(dev, dtype.F32, "b2", 3)}
	rng := rand.New(rand.NewPCG(1, 2))
	for _, p := range n.params() {
		v := make([]float64, p.Len())
		for i := range v {
			v[i] = rng.NormFloat64() / 4
		}
		p.SetFloat64s(v)
	}
	n.x = make([]float64, 8*6)
	for i := range n.x {
		n.x[i] = rng.NormFloat64()
	}
	n.y = []int64{0, 1, 2, 0, 1, 2, 0, 1}
	return n
}

func (n *failNet) params() []*autograd.Tensor { return []*autograd.Tensor{n.w1, n.b1, n.w2, n.b2} }

// loss builds the loss in s; how picks the path through the engine.
func (n *failNet) loss(s *autograd.Scope, how string) *autograd.Tensor {
	if how == "copying hooks" {
		s.PushSavedHooks(autograd.SavedHooks{
			Pack: func(t *autograd.Tensor) any { return t },
			Unpack: func(p any) *autograd.Tensor {
				t := p.(*autograd.Tensor)
				c := autograd.New(t.Device(), t.DType(), device.Workspace, t.Shape()...)
				c.CopyFrom(t)
				return c
			},
			Free: func(p any) { p.(*autograd.Tensor).Release() },
		})
		defer s.PopSavedHooks()
	}
	x := s.FromFloat64s(n.dev, []int{8, 6}, n.x).Cast(dtype.F32)
	hidden := func(ins []*autograd.Tensor) []*autograd.Tensor {
		h := autograd.Linear(ins[0], n.w1, n.b1)
		defer h.Release()
		return []*autograd.Tensor{h.Tanh()}
	}
	var h *autograd.Tensor
	if how == "checkpoint" {
		h = checkpoint.Run(hidden, x)[0]
	} else {
		h = hidden([]*autograd.Tensor{x})[0]
	}
	return autograd.CrossEntropy(autograd.Linear(h, n.w2, n.b2), s.FromInt64s(n.dev, []int{8}, n.y), autograd.CEOptions{})
}

// TestFailedBackwardGivesBackAtOnce fails a backward pass at each of its
// allocations in turn and checks that when Backward returns the error it
// has already released every gradient and temporary it made (no workspace
// block is live: what remains is the graph, which the scope frees, and
// what reached the leaves' gradients, which ZeroGrad frees), and that after
// both the device holds exactly the parameters again. With RetainGraph the
// failed pass is then run again on the same graph, and must give the
// gradients of a pass that never failed, bit for bit.
func TestFailedBackwardGivesBackAtOnce(t *testing.T) {
	for _, how := range []string{"plain", "copying hooks", "checkpoint"} {
		n := newFailNet()
		before := n.dev.Live()
		s := autograd.NewScope()
		l := n.loss(s, how)
		a0 := n.dev.Stats().Requested.Allocs
		if err := l.Backward(); err != nil {
			t.Fatal(err)
		}
		total := int(n.dev.Stats().Requested.Allocs - a0)
		want := n.takeGrads()
		s.Release()
		for k := 1; k <= total; k++ {
			for _, retain := range []bool{false, true} {
				var opts []autograd.BackwardOption
				if retain {
					opts = append(opts, autograd.RetainGraph())
				}
				l := n.loss(s, how)
				n.dev.InjectOOM(k)
				err := l.Backward(opts...)
				var oom *device.OOMError
				if !errors.As(err, &oom) || !errors.Is(err, device.ErrInjected) {
					t.Fatalf("%s, allocation %d of %d: Backward returned %v, want the injected out-of-memory error", how, k, total, err)
				}
				if ws := n.dev.Stats().ByTag[device.Workspace].Current; ws != 0 {
					t.Fatalf("%s: backward failed at allocation %d of %d (%s) and still holds %d B of workspace: %v", how, k, total, oom.Label.Creator(), ws, n.dev.Leaks(device.Parameter, device.Gradient, device.Activation))
				}
				n.takeGrads()
				if retain {
					if err := l.Backward(opts...); err != nil {
						t.Fatalf("%s: backward again after failing at allocation %d: %v", how, k, err)
					}
					if got := n.takeGrads(); !slices.Equal(got, want) {
						t.Fatalf("%s: backward again after failing at allocation %d: other gradients", how, k)
					}
				}
				s.Release()
				if after := n.dev.Live(); !slices.Equal(before, after) {
					t.Fatalf("%s: after a backward failed at allocation %d of %d, Release and ZeroGrad, the device holds %v, want %v", how, k, total, after, before)
				}
			}
		}
		t.Logf("%s: backward failed at each of its %d allocations, with and without RetainGraph", how, total)
		for _, p := range n.params() {
			p.Release()
		}
		if err := n.dev.Close(); err != nil {
			t.Fatal(fmt.Errorf("%s: %w", how, err))
		}
	}
}

// takeGrads returns the bits of the parameters' gradients, in order, and
// zeroes them.
func (n *failNet) takeGrads() []uint64 {
	var out []uint64
	for _, p := range n.params() {
		if g := p.Grad(); g != nil {
			for _, v := range g.Float64s() {
				out = append(out, math.Float64bits(v))
			}
		}
		p.ZeroGrad()
	}
	return out
}
