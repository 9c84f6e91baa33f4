package kernels

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/headroom-ml/headroom/dtype"
)

// BenchmarkConvHalf compares the float32 kernels with the 16-bit ones on
// bfloat16 operands and outputs (what autocast runs) over ResNet-18's
// CIFAR 3×3 layers at batch 32, each pass alone, in GFLOP/s (2·N·K·C·R·S·
// OH·OW per pass). Names are key=value for benchstat: compare dtype=f32
// with dtype=bf16 (`benchstat -col /dtype`).
func BenchmarkConvHalf(b *testing.B) {
	r := rand.New(rand.NewPCG(3, 4))
	layers := []struct {
		name string
		p    ConvArgs
	}{{"32x32x64-64", conv3x3(32, 32, 64, 64, 1)}, {"16x16x128-128", conv3x3(32, 16, 128, 128, 1)}}
	for _, l := range layers {
		c := &convBench{p: l.p}
		c.alloc(r)
		h := func(v []float32) Half16 {
			bits := make([]uint16, len(v))
			for i, x := range v {
				bits[i] = dtype.BF16FromF32(x)
			}
			return Half16{Bits: bits, BF16: true}
		}
		x, w, dy := h(c.x), h(c.w), h(c.dy)
		y, dx, dw := h(c.y), h(c.dx), h(c.dw)
		ws := make([]float32, convMaxWS(l.p))
		passes := []struct {
			name    string
			f32, bf func()
		}{
			{"fwd", c.forward, func() { Conv2dHalf(l.p, ConvOut{H: y}, x, w, ws) }},
			{"dgrad", c.gradInput, func() { Conv2dGradInputHalf(l.p, ConvOut{H: dx}, dy, w, ws) }},
			{"wgrad", c.gradWeight, func() { Conv2dGradWeightHalf(l.p, ConvOut{H: dw}, dy, x, ws) }},
		}
		for _, pass := range passes {
			for _, v := range []struct {
				dt string
				f  func()
			}{{"f32", pass.f32}, {"bf16", pass.bf}} {
				b.Run(fmt.Sprintf("layer=%s/pass=%s/dtype=%s", l.name, pass.name, v.dt), func(b *testing.B) {
					v.f()
					for b.Loop() {
						v.f()
					}
					b.ReportMetric(c.flops()*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
				})
			}
		}
	}
}
