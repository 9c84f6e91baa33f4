package kernels

import (
	"math/rand/v2"
	"testing"
	"time"
)

// BenchmarkGEMMSharedA times products whose op(A) several column chunks
// read (the weight gradient's short M) with op(A) packed once per call
// into the shared A, and with each compute task packing its own rows of
// it (gemmABudget 0), in turn in one loop, best of each, as float32 and
// as bfloat16 pairs (GemmHalf): it reports the shared run's GFLOP/s and
// the per-task run's time over it.
func BenchmarkGEMMSharedA(b *testing.B) {
	shapes := []gemmBench{
		{name: "wgrad_64x576x256", tb: true, m: 64, n: 576, k: 256},
		{name: "wgrad_64x576x1024", tb: true, m: 64, n: 576, k: 1024},
		{name: "wgrad_128x1152x256", tb: true, m: 128, n: 1152, k: 256},
		{name: "wgrad_64x4608x512", tb: true, m: 64, n: 4608, k: 512},
		{name: "fwd_64x2048x576", m: 64, n: 2048, k: 576},
	}
	budget := gemmABudget
	defer func() { gemmABudget = budget }()
	r := rand.New(rand.NewPCG(1, 2))
	for _, s := range shapes {
		g, la, lb, lc := s.args()
		g.Batch, g.StrideA, g.StrideB, g.StrideC = 1, 0, 0, 0
		x, y, c := benchF32(r, la), benchF32(r, lb), make([]float32, lc)
		hx, hy := gemmHalfBits(r, la, true), gemmHalfBits(r, lb, true)
		for _, in := range []string{"f32", "bf16"} {
			f := func() { Gemm(g, x, y, c) }
			if in == "bf16" {
				f = func() { GemmHalf(g, hx, hy, true, true, c) }
			}
			b.Run(s.name+"/"+in, func(b *testing.B) {
				best := [2]time.Duration{1 << 62, 1 << 62}
				for n := 0; b.Loop(); n++ {
					for v := range 2 {
						i := (n + v) % 2
						gemmABudget = [2]int{budget, 0}[i]
						t0 := time.Now()
						f()
						best[i] = min(best[i], time.Since(t0))
					}
				}
				gemmABudget = budget
				b.ReportMetric(s.flops()/best[0].Seconds()/1e9, "GFLOP/s")
				b.ReportMetric(float64(best[1])/float64(best[0]), "xPerTask")
			})
		}
	}
}
