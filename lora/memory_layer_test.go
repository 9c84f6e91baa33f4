package lora_test

import (
	"testing"

	"github.com/headroom-ml/headroom/autograd"
	"github.com/headroom-ml/headroom/device"
	"github.com/headroom-ml/headroom/device/cpu"
	"github.com/headroom-ml/headroom/dtype"
	"github.com/headroom-ml/headroom/lora"
	"github.com/headroom-ml/headroom/nn"
)

// TestLinearActivationBytes checks lora.Linear's activation formula on
// cpu: an adapted Linear's Forward on x (M, In) leaves M·Out·s (the
// result) + M·Rank·s (the scaled low-rank activations B's product saves)
// bytes of activations, without dropout; with dropout also the dropped
// input M·In·s, which A's product saves. (Float base: its Linear saves x,
// alive already.)
func TestLinearActivationBytes(t *testing.T) {
	const m, r = 6, 3
	for _, drop := range []float64{0, 0.5} {
		dev := cpu.New(0, device.Options{})
		g := newGPT(t, dev, dtype.F32, 26)
		ad, err := lora.Apply(g, lora.Config{Rank: r, Dropout: drop, Targets: []string{"mlp.c_fc"}}, autograd.NewGenerator(1))
		if err != nil {
			t.Fatal(err)
		}
		a := ad.Adapters[0]
		s := autograd.NewScope()
		x := s.Zeros(dev, dtype.F32, m, a.In).SetRequiresGrad(false)
		leaf := s.LeafOf(x) // requires grad, so the graph is recorded
		before := dev.Stats().ByTag[device.Activation].Current
		y := a.Forward(leaf)
		got := dev.Stats().ByTag[device.Activation].Current - before
		want := int64(4 * (m*a.Out + m*r))
		if drop > 0 {
			want += int64(4 * m * a.In)
		}
		if got != want {
			t.Errorf("dropout %g: Forward left %d activation bytes; want 4·(M·Out + M·r%s) = %d", drop, got, map[bool]string{true: " + M·In", false: ""}[drop > 0], want)
		}
		y.Release()
		s.Release()
		nn.Release(ad)
	}
}
