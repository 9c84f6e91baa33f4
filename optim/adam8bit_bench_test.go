package optim_test

import (
	"testing"

	"github.com/headroom-ml/headroom/autograd"
	"github.com/headroom-ml/headroom/device"
	"github.com/headroom-ml/headroom/device/cpu"
	"github.com/headroom-ml/headroom/dtype"
	"github.com/headroom-ml/headroom/optim"
)

// BenchmarkAdamWStep times one Step over a 1 M-element F32 parameter with
// F32 and with 8-bit state, in the same binary.
func BenchmarkAdamWStep(b *testing.B) {
	const n = 1 << 20
	for _, kind := range []string{"f32", "8bit"} {
		b.Run(kind, func(b *testing.B) {
			dev := cpu.New(0, device.Options{})
			p := autograd.Param(dev, dtype.F32, "w", n)
			g := make([]float64, n)
			for i := range g {
				g[i] = float64(i%97) - 48
			}
			setGrad(b, p, g)
			var o optim.Optimizer
			var err error
			if kind == "f32" {
				o, err = optim.NewAdamW(params(p), optim.AdamConfig{})
			} else {
				o, err = optim.NewAdamW8bit(params(p), optim.AdamConfig{}, optim.Quant8Config{})
			}
			if err != nil {
				b.Fatal(err)
			}
			b.ResetTimer()
			for range b.N {
				if err := o.Step(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
