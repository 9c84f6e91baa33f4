package kernels

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// BenchmarkBatchNormBF16Paths times the bfloat16 batch norm, training
// forward (with ReLU) and backward, with the AVX-512 loops and with the
// AVX2 ones alone, over planes of ResNet-50's first and third stages at
// batch 32: 64 channels of 32×32, 256 of 8×8.
// Names are key=value for benchstat (`benchstat -col /path`).
func BenchmarkBatchNormBF16Paths(b *testing.B) {
	r := rand.New(rand.NewPCG(14, 15))
	saved := CPU
	defer func() { CPU = saved }()
	for _, sh := range [][2]int{{64, 1024}, {256, 64}} {
		c, hw := sh[0], sh[1]
		k := newBNHalfCase(r, 32, c, hw)
		m := len(k.x)
		y, dx := make([]uint16, m), make([]uint16, m)
		mean, is, dw, db := make([]float32, k.c), make([]float32, k.c), make([]float32, k.c), make([]float32, k.c)
		passes := map[string]func(){
			"fwd": func() {
				BatchNormBF16(y, k.x, k.w, k.b, k.runMean, k.runVar, mean, is, k.n, k.c, hw, true, true, 0.1, 1e-5)
			},
			"bwd": func() { BatchNormGradBF16(dx, k.dy, k.x, dw, db, k.w, mean, is, k.n, k.c, hw, true) },
		}
		for _, pass := range []string{"fwd", "bwd"} {
			for _, path := range []Features{saved, {AVX2FMA: saved.AVX2FMA}} {
				b.Run(fmt.Sprintf("hw=%d/pass=%s/path=%s", hw, pass, path.Path()), func(b *testing.B) {
					CPU = path
					defer func() { CPU = saved }()
					f := passes[pass]
					for b.Loop() {
						f()
					}
					b.ReportMetric(float64(m)*float64(b.N)/b.Elapsed().Seconds()/1e9, "Gelem/s")
				})
			}
		}
	}
}
