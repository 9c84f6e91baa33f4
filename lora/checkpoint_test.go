package lora_test

import (
	"slices"
	"testing"

	"github.com/headroom-ml/headroom/autograd"
	"github.com/headroom-ml/headroom/checkpoint"
	"github.com/headroom-ml/headroom/device"
	"github.com/headroom-ml/headroom/device/cpu"
	"github.com/headroom-ml/headroom/dtype"
	"github.com/headroom-ml/headroom/lora"
	"github.com/headroom-ml/headroom/nn"
)

// TestCheckpointedGradients: with every block checkpointed (the base's
// RunBlocks, as --checkpoint sets it) and with selective recomputation,
// the adapters' gradients are bit for bit those without, float and int8
// base, and the base still gets none.
func TestCheckpointedGradients(t *testing.T) {
	for _, base := range []lora.Base{lora.Float, lora.Int8} {
		dev := cpu.New(0, device.Options{})
		m := apply(t, newGPT(t, dev, dtype.F32, 17), lora.Config{Rank: 2, Base: base})
		randomB(m, 18)
		x, y := batch(19)
		grads := func() [][]float64 {
			s := autograd.NewScope()
			if err := loss(s, dev, m, x, y).Backward(); err != nil {
				t.Fatal(err)
			}
			s.Release()
			var out [][]float64
			for _, p := range m.Params() {
				if p.Buffer && p.T.Grad() != nil {
					t.Fatalf("%v: frozen %s has a gradient", base, p.Name)
				}
				if !p.Buffer {
					out = append(out, p.T.Grad().Float64s())
				}
			}
			nn.ZeroGrad(m)
			return out
		}
		want := grads()
		for name, run := range map[string]func([]nn.Layer, *autograd.Tensor) *autograd.Tensor{
			"checkpoint": func(ls []nn.Layer, x *autograd.Tensor) *autograd.Tensor { return checkpoint.Sequential(ls, len(ls), x) },
			"selective":  func(ls []nn.Layer, x *autograd.Tensor) *autograd.Tensor { return checkpoint.SelectiveEach(ls, nil, x) },
		} {
			m.Base.RunBlocks = run
			got := grads()
			for i := range want {
				if !slices.Equal(got[i], want[i]) {
					t.Errorf("%v base, %s: adapter gradient %d differs from the plain run's", base, name, i)
				}
			}
		}
		nn.Release(m)
	}
}
